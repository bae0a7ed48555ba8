/**
 * The bench page: bundled with esbuild and served on loopback, opened in
 * several tabs of one Chromium. Node drives it with `page.evaluate`; every
 * timing is taken inside the page (absolute times for cross-tab figures, so
 * the CDP round trips of the driver are never part of them).
 *
 * One "holder" protocol for every lock kind, so the cross-tab scenarios run
 * the same steps for zaris and its peers: `hold` (resolves once held),
 * `wait` (starts waiting, stamps the time it got the lock), `release`
 * (stamps the time it let go), `waited` (resolves that stamp).
 */
import { createLeaderElection, BroadcastChannel as LibChannel } from 'broadcast-channel'
import { connect, type Client, type Lock } from 'zaris'
import { election } from 'zaris/elect'
import { tabs, type Tabs } from 'zaris/tabs'
import { absNow, loop, sleep, type Trial } from '../lib/measure'

type Kind = 'zaris' | 'tabs' | 'weblocks' | 'gate-tx' | 'raw' | 'zaris-election' | 'elect-election' | 'elect-elected' | 'bc-election'

interface Held {
  /** Lets go; resolves the time just before letting go. */
  release(): Promise<number>
}

const clients = new Map<string, Promise<Client>>()
/** One zaris client per namespace and tab. */
function client(ns: string): Promise<Client> {
  let c = clients.get(ns)
  if (!c) clients.set(ns, (c = connect(`zaris://idb/${ns}`)))
  return c
}

const tabsOf = new Map<string, Tabs>()
/** One zaris/tabs store per namespace and tab, on a namespace of its own (`<ns>-tabs`): no full client of this tab shares it. */
function lean(ns: string): Tabs {
  let t = tabsOf.get(ns)
  if (!t) tabsOf.set(ns, (t = tabs(`${ns}-tabs`, { ttl: 30_000 })))
  return t
}

let rawDb: Promise<IDBDatabase> | undefined
/** A plain IndexedDB database with one object store: the ceiling. */
function raw(): Promise<IDBDatabase> {
  rawDb ??= new Promise((resolve, reject) => {
    const req = indexedDB.open('bench-raw', 1)
    req.onupgradeneeded = () => req.result.createObjectStore('kv')
    req.onsuccess = () => resolve(req.result)
    req.onerror = () => reject(req.error)
  })
  return rawDb
}

/**
 * One readwrite transaction that puts or deletes `key` (after reading it,
 * with `read`: a check's shape; at `strict` durability, as a zaris take),
 * resolved on complete.
 */
async function rawTx(key: string, put: boolean, read = false, durability: IDBTransactionDurability = 'default'): Promise<void> {
  const db = await raw()
  await new Promise<void>((resolve, reject) => {
    const tx = db.transaction('kv', 'readwrite', { durability })
    const store = tx.objectStore('kv')
    const write = () => (put ? store.put({ holder: 'x', at: Date.now() }, key) : store.delete(key))
    if (read) store.get(key).onsuccess = write
    else write()
    tx.oncomplete = () => resolve()
    tx.onerror = tx.onabort = () => reject(tx.error)
  })
}

/** Held from now on, let go by `letGo`. */
function heldNow(letGo: () => Promise<unknown>): { at: number; held: Held } {
  return {
    at: absNow(),
    held: {
      async release() {
        const t0 = absNow()
        await letGo()
        return t0
      },
    },
  }
}

/** Holds the Web Lock `name` from its grant; its release runs `before` if given (timed from before it), then lets it go. */
async function webLock(name: string, before?: () => Promise<void>): Promise<{ at: number; held: Held }> {
  let letGo!: () => void
  const gone = new Promise<void>((r) => (letGo = r))
  const at = await new Promise<number>((granted) => {
    void navigator.locks.request(name, () => {
      granted(absNow())
      return gone
    })
  })
  return {
    at,
    held: {
      async release() {
        const t0 = absNow()
        if (before) await before()
        letGo()
        return t0
      },
    },
  }
}

let held: Held | undefined
let waiting: Promise<number> | undefined

/** Takes `key` with `kind`, waiting as long as it takes; resolves the time it was taken. */
async function take(kind: Kind, ns: string, key: string, first: boolean): Promise<{ at: number; held: Held }> {
  switch (kind) {
    case 'zaris': {
      const c = await client(ns)
      const lock = (await c.locks.acquire(key, { ttl: 30_000, wait: Infinity })) as Lock
      const at = absNow()
      return {
        at,
        held: {
          async release() {
            const t0 = absNow()
            await lock.release()
            return t0
          },
        },
      }
    }
    case 'tabs': {
      const lock = (await lean(ns).locks.acquire(key, { wait: Infinity }))!
      return heldNow(() => lock.release())
    }
    case 'weblocks':
      return webLock(key)
    case 'gate-tx':
      // What a handoff that the store hands over in the release's own step must cost at least (bench/FINDINGS.md,
      // "Cross-tab handoff"): the holder's read-then-write transaction (the next holder's entry), then its Web Lock
      // goes; the waiter holds at the grant. Strict, as every zaris take (a token must not come back after an OS crash).
      await raw()
      return webLock(`bench-gate:${key}`, () => rawTx(key, true, true, 'strict'))
    case 'raw': {
      // What a handoff must cost at least: the holder's transaction, one message, the taker's transaction.
      const channel = new BroadcastChannel(`bench-raw:${key}`)
      await raw()
      const at = await new Promise<number>((resolve) => {
        channel.onmessage = async () => {
          await rawTx(key, true)
          resolve(absNow())
        }
        // The first holder takes it without a handoff.
        if (first) void rawTx(key, true).then(() => resolve(absNow()))
      })
      channel.onmessage = null
      return {
        at,
        held: {
          async release() {
            const t0 = absNow()
            await rawTx(key, false)
            channel.postMessage('free')
            channel.close()
            return t0
          },
        },
      }
    }
    case 'zaris-election': {
      const c = await client(ns)
      const election = c.election(key, { ttl: 30_000 })
      const term = (await election.campaign())!
      const at = absNow()
      return {
        at,
        held: {
          async release() {
            const t0 = absNow()
            await term.revoke()
            return t0
          },
        },
      }
    }
    case 'elect-elected': {
      // zaris/elect as an app acts on it: leading from `elected` (at the Web Lock's grant; the term's token follows).
      const e = election(key, { namespace: `${ns}-elect`, ttl: 30_000 })
      const elected = new Promise<number>((r) => e.addEventListener('elected', () => r(absNow()), { once: true }))
      void e.campaign()
      const at = await elected
      await e.campaign()
      return { at, held: heldNow(() => e.resign()).held }
    }
    case 'elect-election': {
      // zaris/elect, on a namespace of its own: no full client of this tab shares its store.
      const e = election(key, { namespace: `${ns}-elect`, ttl: 30_000 })
      await e.campaign()
      return heldNow(() => e.resign())
    }
    case 'bc-election': {
      const elector = createLeaderElection(new LibChannel(`bench-leader:${ns}:${key}`))
      await elector.awaitLeadership()
      return heldNow(() => elector.die())
    }
  }
}

const api = {
  absNow,
  /** The tab's zaris client of a namespace (for the profiling tools). */
  client,
  /** The tab's zaris/tabs of a namespace (for the profiling tools). */
  lean,
  async ready(ns: string): Promise<void> {
    await (await client(ns)).get('warm')
    await raw()
  },
  /** One-tab throughput: acquire + release back to back. */
  async loop(kind: 'zaris' | 'tabs' | 'weblocks' | 'raw', ns: string, durationMs: number): Promise<Trial> {
    if (kind === 'tabs') {
      const t = lean(ns)
      await t.get('warm')
      return loop(async () => {
        const lock = await t.locks.acquire('lock:one-tab')
        if (!lock) throw new Error('the bench lock was not free')
        await lock.release()
      }, durationMs)
    }
    if (kind === 'zaris') {
      const c = await client(ns)
      return loop(async () => {
        const lock = await c.locks.acquire('lock:one-tab', { ttl: 30_000 })
        if (!lock) throw new Error('the bench lock was not free')
        await lock.release()
      }, durationMs)
    }
    if (kind === 'weblocks') return loop(() => navigator.locks.request('bench:one-tab', async () => {}), durationMs)
    return loop(async () => {
      await rawTx('one-tab', true)
      await rawTx('one-tab', false)
    }, durationMs)
  },
  /**
   * One-tab throughput of a shared lock: acquire shared + release back to
   * back, alone or `beside` another shared hold of the same lock that this
   * tab keeps meanwhile (a join of a group that is there).
   */
  async sharedLoop(kind: 'zaris' | 'weblocks', ns: string, durationMs: number, beside: boolean): Promise<Trial> {
    const key = `bench:shared:${beside ? 'beside' : 'alone'}`
    if (kind === 'zaris') {
      const c = await client(ns)
      const other = beside ? await c.locks.acquire(key, { mode: 'shared', ttl: 30_000 }) : null
      try {
        return await loop(async () => {
          const lock = await c.locks.acquire(key, { mode: 'shared', ttl: 30_000 })
          if (!lock) throw new Error('the bench lock was not free')
          await lock.release()
        }, durationMs)
      } finally {
        await other?.release()
      }
    }
    let letGo: (() => void) | undefined
    if (beside) await new Promise<void>((held) => void navigator.locks.request(key, { mode: 'shared' }, () => (held(), new Promise<void>((r) => (letGo = r)))))
    try {
      return await loop(() => navigator.locks.request(key, { mode: 'shared' }, async () => {}), durationMs)
    } finally {
      letGo?.()
    }
  },
  /** Takes the lock and keeps it; resolves once held. */
  async hold(kind: Kind, ns: string, key: string): Promise<void> {
    held = (await take(kind, ns, key, true)).held
  },
  /** Starts waiting for the lock (the time it is taken is kept); resolves after `settleMs`, once the wait is set up. */
  async wait(kind: Kind, ns: string, key: string, settleMs: number): Promise<void> {
    waiting = take(kind, ns, key, false).then((r) => {
      held = r.held
      return r.at
    })
    await sleep(settleMs)
  },
  /** Lets go of the held lock; resolves the time just before. */
  async release(): Promise<number> {
    const h = held
    held = undefined
    if (!h) throw new Error('nothing is held in this tab')
    return h.release()
  },
  /** Resolves the time the waiting tab took the lock. */
  waited(): Promise<number> {
    if (!waiting) throw new Error('this tab is not waiting')
    const w = waiting
    waiting = undefined
    return w
  },
  /**
   * Cross-tab notification, echoing side: answers every ping (a put of
   * `watch:ping`, or a BroadcastChannel message) with a pong the same way.
   */
  async echo(kind: 'zaris' | 'tabs' | 'bc', ns: string): Promise<void> {
    if (kind === 'bc') {
      const channel = new BroadcastChannel(`bench-watch:${ns}`)
      channel.onmessage = (ev: MessageEvent<{ ping: number }>) => {
        if (ev.data.ping !== undefined) channel.postMessage({ pong: ev.data.ping })
      }
      stopEcho = () => channel.close()
      return
    }
    const c = kind === 'tabs' ? lean(ns) : await client(ns)
    const controller = new AbortController()
    const watch = c.watch('watch:ping', { signal: controller.signal })
    await watch.ready
    void (async () => {
      for await (const ev of watch) if (ev.type === 'put') await c.put('watch:pong', ev.value!)
    })()
    stopEcho = () => controller.abort()
  },
  stopEcho(): void {
    stopEcho?.()
    stopEcho = undefined
  },
  /**
   * Cross-tab notification, pinging side: `count` round trips, each timed on
   * this tab's clock alone and halved (a put, seen by the other tab's watch,
   * answered by a put seen by this tab's watch; or a message and its answer).
   */
  async ping(kind: 'zaris' | 'tabs' | 'bc', ns: string, count: number, gapMs: number): Promise<Trial> {
    const lat: number[] = []
    let pong: ((n: number) => void) | undefined
    const arrived = (n: number) => pong?.(n)
    let stop: () => void
    let send: (n: number) => Promise<unknown>
    if (kind === 'bc') {
      const channel = new BroadcastChannel(`bench-watch:${ns}`)
      channel.onmessage = (ev: MessageEvent<{ pong?: number }>) => ev.data.pong !== undefined && arrived(ev.data.pong)
      send = async (n) => channel.postMessage({ ping: n })
      stop = () => channel.close()
    } else {
      const c = kind === 'tabs' ? lean(ns) : await client(ns)
      const controller = new AbortController()
      const watch = c.watch('watch:pong', { signal: controller.signal })
      await watch.ready
      void (async () => {
        for await (const ev of watch) if (ev.type === 'put' && typeof ev.value === 'number') arrived(ev.value)
      })()
      send = (n) => c.put('watch:ping', n)
      stop = () => controller.abort()
    }
    const start = performance.now()
    for (let i = 0; i < count; i++) {
      const back = new Promise<void>((resolve) => (pong = (n) => n === i && resolve()))
      const t = performance.now()
      await send(i)
      await back
      lat.push((performance.now() - t) / 2)
      await sleep(gapMs)
    }
    stop()
    return { ops: count, ms: performance.now() - start, lat }
  },
}
let stopEcho: (() => void) | undefined

declare global {
  interface Window {
    bench: typeof api
    benchReady: boolean
  }
}

window.bench = api
// Callbacks that Node passes to page.evaluate were compiled by tsx with esbuild's keepNames, which calls __name.
;(globalThis as { __name?: unknown }).__name = (f: unknown) => f
window.benchReady = true
