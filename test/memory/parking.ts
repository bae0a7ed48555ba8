/**
 * What the tests of the store's handover (parked.test.ts, parked-turns.test.ts)
 * share: commits as the core sends them to a local store, a clock that fires
 * thousands of timers fast, the heap after a full collection.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { Check, CommitResult, Op } from 'zaris'
import { ManualClock } from 'zaris/testing'
import { LocalStore, type StoreQuota } from '../../src/adapters/kit/local-store'
import type { ParkOptions } from '../../src/adapters/kit/parked'
import type { Clock, TimerHandle } from '../../src/core/time/clock'

export type Success = Extract<CommitResult, { ok: true }>

export const set = (key: string, owner?: string, ttl?: number): Op => ({ type: 'set', key, value: null, ...(owner ? { owner } : {}), ...(ttl ? { ttl } : {}) })
export const del = (key: string): Op => ({ type: 'delete', key })
export const absent = (key: string): Check => ({ key, revision: null })
export const life = (key: string, created: number): Check => ({ key, created })
export const tick = () => new Promise((r) => setTimeout(r, 0))

/** A commit that may park, and what became of it. */
export function parked(store: LocalStore, checks: Check[], ops: Op[], park: Partial<ParkOptions> = {}) {
  const out: { answer?: CommitResult; error?: unknown; parked: boolean } = { parked: false }
  const r = store.commit(checks, ops, undefined, undefined, { ms: 10_000, keep: true, ...park, onParked: () => (out.parked = true) })
  if (r instanceof Promise) r.then((a) => (out.answer = a), (e: unknown) => (out.error = e))
  else out.answer = r
  return out
}

/** A waiter's place in line (`q.<id>`), then its take of `locks`, parked as the core sends it; `again` sends the take once more. */
export function waiter(store: LocalStore, id: string, ms: number, locks = ['lock'], park: Partial<ParkOptions> = {}) {
  const place = (store.commit([absent(`q.${id}`)], [set(`q.${id}`, id)]) as Success).entries[0]!.created
  const again = (more: Partial<ParkOptions> = {}) =>
    parked(store, [...locks.map(absent), life(`q.${id}`, place)], [...locks.map((l) => set(l, id)), del(`q.${id}`)], { order: place, ms, ...park, ...more })
  return { place, take: again(), again, giveUp: () => store.commit([life(`q.${id}`, place)], [del(`q.${id}`)]) }
}

/** The store with `lock` held by `h` (no TTL: no expiry timer of its own), and its release. */
export function heldStore(clock: Clock = new ManualClock(), quota?: StoreQuota) {
  const store = new LocalStore({ clock, quota })
  const owned = (key: string) => store.get(key)?.owner
  const hold = (key: string, owner: string) => (store.commit([absent(key)], [set(key, owner)]) as Success).entries[0]!.created
  const held = hold('lock', 'h')
  const release = (key = 'lock') => store.commit([life(key, store.get(key)!.created)], [del(key)])
  return { store, owned, hold, held, release }
}

/**
 * A test clock whose timers fire synchronously as it is advanced, due ones
 * in time order: ManualClock lets promise chains settle after each timer,
 * which makes thousands of waits take seconds.
 */
export class StepClock implements Clock {
  #now = 0
  #seq = 0
  readonly #timers = new Map<TimerHandle, { at: number; seq: number; fn: () => void }>()
  now(): number {
    return this.#now
  }
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const handle = {} as TimerHandle
    this.#timers.set(handle, { at: this.#now + ms, seq: this.#seq++, fn })
    return handle
  }
  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle)
  }
  get pending(): number {
    return this.#timers.size
  }
  advance(ms: number): void {
    const target = this.#now + ms
    for (;;) {
      const due = [...this.#timers].filter(([, t]) => t.at <= target).sort(([, a], [, b]) => a.at - b.at || a.seq - b.seq)
      if (due.length === 0) break
      for (const [handle, t] of due) {
        if (!this.#timers.delete(handle)) continue
        this.#now = Math.max(this.#now, t.at)
        t.fn()
      }
    }
    this.#now = target
  }
}

/** The bytes of the heap in use after a full collection (the flag set at run time: no special start of Node). */
export function heapAfterGc(): number {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
  return process.memoryUsage().heapUsed
}

