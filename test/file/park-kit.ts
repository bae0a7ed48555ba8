/**
 * What the `file://` handover tests share: ops and checks spelled short,
 * the parked options, adapters on one new file, a clock moved by hand, and
 * a count of a statement's runs (better-sqlite3's `prepare` wrapped for the
 * test, put back after it).
 */
import Database from 'better-sqlite3'
import { afterEach } from 'vitest'
import type { Adapter } from 'zaris'
import type { TimerHandle } from '../../src/core/time/clock'
import { newFile, open } from './helpers'

export { absent, del, life, ok, park, set } from '../commit-terms'

/** `n` adapters on one new file. */
export async function adapters(n: number, more: Parameters<typeof open>[0] = {}): Promise<{ path: string; all: Adapter[] }> {
  const path = newFile()
  const all: Adapter[] = []
  for (let i = 0; i < n; i++) all.push(await open({ path, ...more }))
  return { path, all }
}

/** A clock moved by hand whose timers fire only when told (`fire`), and that says how many are set. */
export function handClock(start: number) {
  let now = start
  let next = 0
  const timers = new Map<number, { at: number; fn: () => void }>()
  return {
    now: () => now,
    setTimeout: (fn: () => void, ms: number) => {
      timers.set(++next, { at: now + ms, fn })
      return next as unknown as TimerHandle
    },
    clearTimeout: (h: TimerHandle) => void timers.delete(h as unknown as number),
    set: (t: number) => void (now = t),
    fire: () => {
      for (const [h, t] of [...timers]) if (t.at <= now && timers.delete(h)) t.fn()
    },
    pending: () => timers.size,
  }
}

const unpatch: Array<() => void> = []
afterEach(() => {
  for (const f of unpatch.splice(0)) f()
})

/** Runs `undo` when the test ends (a patch of a library's prototype put back). */
export function afterTest(undo: () => void): void {
  unpatch.push(undo)
}

/**
 * Counts the runs (a run that throws counts) of every statement prepared
 * from now on whose text contains `part` (is `part`, with `exact`) and whose
 * arguments `pick`, until the test ends.
 */
export function countRuns(part: string, { exact = false, pick = () => true }: { exact?: boolean; pick?: (args: unknown[]) => boolean } = {}): () => number {
  const proto = Database.prototype as unknown as { prepare(sql: string): Record<string, (...a: unknown[]) => unknown> }
  const prepare = proto.prepare
  let n = 0
  proto.prepare = function (this: unknown, sql: string) {
    const st = prepare.call(this, sql)
    if (exact ? sql === part : sql.includes(part)) {
      for (const m of ['get', 'all', 'run', 'iterate'] as const) {
        const f = st[m]!
        st[m] = function (this: unknown, ...a: unknown[]) {
          if (pick(a)) n++
          return f.apply(this, a)
        }
      }
    }
    return st
  }
  unpatch.push(() => (proto.prepare = prepare))
  return () => n
}
