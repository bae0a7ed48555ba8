/**
 * Helpers for tests of the IndexedDB store's liveness and reaper in one real
 * Chromium page: stores of their own ("other tabs" in this page), a recorder
 * of every event, and the Web Locks registrations and "gone" words a client
 * makes, made by hand so a test can end them as a crash would.
 */
import { afterEach } from 'vitest'
import type { Adapter, Clock, WatchEvent } from 'zaris'
import { Client } from 'zaris'
import { indexedDbAdapter } from 'zaris/indexeddb'
import { dropNamespace } from '../browser-harness/drop-namespace'

const opened: Array<{ close(): Promise<unknown> }> = []
const names: string[] = []

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Closes what the test opened and deletes its databases. */
export function cleanUpAfterEach(): void {
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((o) => o.close().catch(() => {})))
    await Promise.all(names.splice(0).map(dropNamespace))
  })
}

/** A namespace of its own, deleted after the test. */
export function namespace(prefix = 'hand'): string {
  const ns = `${prefix}-${Math.random().toString(36).slice(2, 10)}`
  names.push(ns)
  return ns
}

/** Closes `thing` after the test. */
export function track<T extends { close(): Promise<unknown> }>(thing: T): T {
  opened.push(thing)
  return thing
}

export function adapterOn(ns: string, clock?: Clock, liveness = true): Adapter {
  return track(indexedDbAdapter({ namespace: ns, ...(clock ? { clock } : {}), ...(liveness ? {} : { liveness: false }) }))
}

export function clientOn(ns: string, id: string, clock?: Clock): Client {
  const c = new Client(adapterOn(ns, clock), { id })
  opened.push(c)
  return c
}

/** Wall time with its own identity: adapters given it share a store of their own in this page, as another tab would. */
export function otherTab(): Clock {
  return {
    now: () => Date.now(),
    setTimeout: (fn, ms) => setTimeout(fn, Math.max(0, ms)) as never,
    clearTimeout: (h) => clearTimeout(h as never),
  }
}

/** Every event of the store (wait-line keys included) through a raw adapter. */
export async function record(adapter: Adapter): Promise<WatchEvent[]> {
  const events: WatchEvent[] = []
  await adapter.watch('', { event: (ev) => events.push(ev), error: () => {} })
  return events
}

export async function until(cond: () => boolean | Promise<boolean>, timeout = 5_000): Promise<number> {
  const start = performance.now()
  while (!(await cond())) {
    if (performance.now() - start > timeout) throw new Error(`condition not met within ${timeout} ms`)
    await sleep(2)
  }
  return performance.now() - start
}

/** The lock manager's own `query()`, past any spy a test puts on `navigator.locks`. */
export const realQuery = (): Promise<LockManagerSnapshot> => LockManager.prototype.query.call(navigator.locks)

/**
 * A registration made by hand, as src/adapters/indexeddb/liveness.ts makes one: the id's shared lock and an
 * exclusive lock of its own. `release()` lets both go with no announcement, as the browser does for a crashed tab.
 */
export function registration(ns: string, owner: string, own = true): { nonce: string; held: Promise<unknown>; release(): void } {
  const nonce = Math.random().toString(16).slice(2, 14)
  let release!: () => void
  const gone = new Promise<void>((r) => (release = r))
  const hold = (name: string, mode: LockMode) => new Promise<void>((granted) => void navigator.locks.request(name, { mode }, () => (granted(), gone)))
  const shared = hold(`zaris:${ns}:owner:${owner}`, 'shared')
  return { nonce, held: own ? Promise.all([hold(`zaris:${ns}:instance:${nonce}:${owner}`, 'exclusive'), shared]) : shared, release }
}

/** Whether an exclusive request for `owner`'s registration lock waits in the lock manager (a prober's). */
export async function probed(ns: string, owner: string): Promise<boolean> {
  const name = `zaris:${ns}:owner:${owner}`
  return ((await realQuery()).pending ?? []).some((l) => l.name === name && l.mode === 'exclusive')
}

/** Resolves once a reaper's probe for `owner` waits in the lock manager: the reaper found the owner registered and follows it. */
export async function probing(ns: string, owner: string): Promise<void> {
  await until(() => probed(ns, owner), 5_000)
}

/** Posts `message` on the namespace's liveness channel, as a closing tab's word would come (by hand). */
export function say(ns: string, message: unknown): void {
  const channel = new BroadcastChannel(`zaris:idb:${ns}:gone`)
  channel.postMessage(message)
  channel.close()
}

/** A recorder, a reaper, and an entry `lock:<owner>` of each owner written by a raw adapter while its registrations are held. */
export async function followed(ns: string, owners: Record<string, Array<ReturnType<typeof registration>>>) {
  const raw = adapterOn(ns, otherTab(), false)
  const events = await record(raw)
  for (const [owner, regs] of Object.entries(owners)) {
    await Promise.all(regs.map((r) => r.held))
    if (!(await raw.commit([], [{ type: 'set', key: `lock:${owner}`, value: null, ttl: 60_000, owner }])).ok) throw new Error(`setting up lock:${owner} failed`)
  }
  adapterOn(ns, otherTab()) // the reaper
  for (const [owner, regs] of Object.entries(owners)) if (regs.length > 0) await probing(ns, owner) // it follows them
  return { raw, events, ended: (owner: string) => events.some((e) => e.key === `lock:${owner}` && e.type === 'expire') }
}
