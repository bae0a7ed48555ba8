/**
 * The page of bench/tools/elect-closed.ts: zaris/elect from source with its
 * steps stamped — when the key's gate (Web Lock) is granted, when `elected`
 * fired, and when each commit of the election's store began and completed — and
 * broadcast-channel's LeaderElection, for the same "leader tab closed" trial.
 */
import { createLeaderElection, BroadcastChannel as LibChannel } from 'broadcast-channel'
import { election } from '../../../src/elect/index'
import { TermStore } from '../../../src/elect/store'

const now = () => performance.timeOrigin + performance.now()
const stamps: Array<[string, number]> = []

// Stamps the grant of every gate Web Lock this page asks for.
const locks = navigator.locks
const request = locks.request.bind(locks) as (name: string, ...rest: unknown[]) => Promise<unknown>
;(locks as { request: unknown }).request = (name: string, ...rest: unknown[]) => {
  const cb = rest[rest.length - 1] as (lock: Lock | null) => unknown
  rest[rest.length - 1] = (lock: Lock | null) => {
    if (lock && name.includes(':gate:')) stamps.push(['granted', now()])
    return cb(lock)
  }
  return request(name, ...rest)
}
const commit = TermStore.prototype.commit
TermStore.prototype.commit = async function (this: TermStore, ...args: Parameters<typeof commit>) {
  stamps.push(['commit-start', now()])
  try {
    return await commit.apply(this, args)
  } finally {
    stamps.push(['commit-done', now()])
  }
}

function openRaw(name: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(name, 1)
    open.onupgradeneeded = () => open.result.createObjectStore('kv')
    open.onsuccess = () => resolve(open.result)
    open.onerror = () => reject(open.error)
  })
}

function put(db: IDBDatabase, key: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const tx = db.transaction('kv', 'readwrite')
    tx.objectStore('kv').put(now(), key)
    tx.oncomplete = () => resolve()
    tx.onerror = () => reject(tx.error)
  })
}

let led: Promise<number> | undefined
let elected: Promise<number> | undefined
let later: (() => Promise<number>) | undefined
const api = {
  now,
  /** Campaigns (zaris/elect or broadcast-channel) on `key`; `led()` resolves when it leads. */
  async campaign(kind: 'elect' | 'bc' | 'raw', ns: string, key: string): Promise<void> {
    stamps.length = 0
    if (kind === 'raw') {
      // No zaris: the floor of any design whose term is an IndexedDB commit — the Web Lock's grant, then one
      // readwrite transaction on a database every candidate keeps open (and wrote to before).
      const db = await openRaw(`raw-${ns}`)
      await put(db, `${key}:hello`)
      led = new Promise<number>((resolve) => {
        void locks.request(`raw:${ns}:${key}`, async () => {
          stamps.push(['granted', now()])
          await put(db, key)
          resolve(now())
          await new Promise(() => {})
        })
      })
    } else if (kind === 'elect') {
      const e = election(key, { namespace: ns, ttl: 30_000 })
      // zaris/elect leads on the gate's grant: `elected` fires then, the term (its token) follows.
      elected = new Promise<number>((resolve) => e.addEventListener('elected', () => resolve(now()), { once: true }))
      led = e.campaign().then((term) => {
        // A commit of the same shape once things settled: what a commit costs when no tab just closed.
        later = async () => {
          const t = now()
          await e.put(`${key}:data`, 1, { fence: term! })
          return now() - t
        }
        return now()
      })
    } else {
      const elector = createLeaderElection(new LibChannel(`bench-leader:${ns}:${key}`))
      led = elector.awaitLeadership().then(() => now())
    }
    await new Promise((r) => setTimeout(r, 30))
  },
  led: () => led!,
  /** When zaris/elect's `elected` fired (it leads on the grant, before the term's commit lands). */
  elected: () => elected!,
  /** The time of a fenced put by the leader, `ms` after it led. */
  later: async (ms: number) => {
    await new Promise((r) => setTimeout(r, ms))
    return later!()
  },
  stamps: () => stamps,
}

export type TraceApi = typeof api
const w = window as unknown as { trace: TraceApi; bench: { absNow: () => number }; benchReady: boolean }
w.trace = api
// What bench/browser/driver.ts's tabs wait for and time with.
w.bench = { absNow: now }
;(globalThis as { __name?: unknown }).__name = (f: unknown) => f
w.benchReady = true
