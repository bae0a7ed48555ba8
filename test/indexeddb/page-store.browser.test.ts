/**
 * What the IndexedDB adapters of one page share per namespace
 * (src/adapters/indexeddb/page-store.ts), in Chromium: one store per clock,
 * history size and namespace, closed by its last release; group commit; the
 * freeze rule (the page's `freeze` and `resume` events dispatched by the
 * test: no transaction begins while frozen, one open at the freeze runs again
 * once); a wake (resume, or shown again) reading what nobody announced; a
 * database another tab deleted, and one that failed to open, named and
 * retried. Real frozen tabs: test/indexeddb/frozen.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { freeze, freezeMidTransaction, resume } from '../browser-harness/page-events'
import { announceLate, logReadsFrom, writesDuring } from '../browser-harness/idb-spies'
import type { WatchEvent } from 'zaris'
import { systemClock, type Clock, type TimerHandle } from '../../src/core/time/clock'
import { SharedStore } from '../../src/adapters/indexeddb/page-store'

let ns = ''
const acquired: SharedStore[] = []
afterEach(async () => {
  await Promise.all(acquired.splice(0).map((s) => s.release()))
  await deleteDb()
})

function deleteDb(): Promise<void> {
  return new Promise<void>((resolve) => {
    const r = indexedDB.deleteDatabase(`zaris:${ns}`)
    r.onsuccess = r.onerror = r.onblocked = () => resolve()
  })
}

function store(clock: Clock = systemClock, historySize = 100): SharedStore {
  const s = SharedStore.acquire(ns, historySize, clock)
  acquired.push(s)
  return s
}

const fresh = () => (ns = `shared-${Math.random().toString(36).slice(2, 10)}`)
const put = (key: string, value: unknown = 1) => [{ type: 'set' as const, key, value: value as never }]
const tick = (ms = 30) => new Promise((r) => setTimeout(r, ms))

/** Writes a log record of revision `revision` (a put at `key`) and the entry, through a connection of its own: another tab's commit nobody announced. */
function unannounced(revision: number, key: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(`zaris:${ns}`)
    open.onsuccess = () => {
      const tx = open.result.transaction(['log', 'entries'], 'readwrite')
      tx.objectStore('log').put({ revision, events: [{ type: 'put', key, revision, value: 1, created: revision }] })
      tx.objectStore('entries').put({ key, value: 1, revision, created: revision })
      tx.oncomplete = () => (open.result.close(), resolve())
      tx.onerror = () => reject(tx.error)
    }
  })
}

/** A clock the test moves by hand (a fake, named so): its timers run only when `advance` passes them. */
function manualClock() {
  let now = 1_000_000
  let ids = 0
  const timers = new Map<number, { at: number; fn: () => void }>()
  const clock: Clock = {
    now: () => now,
    setTimeout: (fn, ms) => (timers.set(++ids, { at: now + Math.max(0, ms), fn }), ids as unknown as TimerHandle),
    clearTimeout: (handle) => void timers.delete(handle as unknown as number),
  }
  return {
    clock,
    /** The pending timers, as ms from now. */
    pending: () => [...timers.values()].map((t) => t.at - now).sort((a, b) => a - b),
    advance(ms: number) {
      now += ms
      for (const [id, t] of [...timers]) if (t.at <= now) (timers.delete(id), t.fn())
    },
  }
}

/** Watches `s`'s feed from now; the revisions it is handed. */
async function watch(s: SharedStore): Promise<number[]> {
  const seen: number[] = []
  await s.db()
  await s.feed.subscribe('', { event: (e: WatchEvent) => seen.push(e.revision), error: () => {} })
  return seen
}

describe("a page's shared IndexedDB store", () => {
  it('one per clock, history size and namespace; the last release closes it, with a clear CLOSED', async () => {
    fresh()
    const a = store()
    expect(store()).toBe(a)
    const otherClock: Clock = { ...systemClock }
    expect(store(otherClock)).not.toBe(a)
    expect(store(systemClock, 50)).not.toBe(a)
    await a.release()
    expect((await a.commit([], put('k'))).ok).toBe(true)
    await a.release()
    await expect(a.commit([], put('k'))).rejects.toMatchObject({ code: 'CLOSED', message: 'the indexeddb store is closed' })
    acquired.splice(0, 2)
    // Released for good: the next acquire is a new store.
    expect(store()).not.toBe(a)
  })

  it('commits asked while one is in flight go together in the next transaction, each with its own revision and answer', async () => {
    fresh()
    const s = store()
    await s.db()
    const writes = await writesDuring(async () => {
      const answers = await Promise.all([s.commit([], put('a')), s.commit([{ key: 'a', revision: null }], put('a', 2)), s.commit([], put('b'))])
      expect(answers.map((r) => r.ok && r.revision)).toEqual([1, false, 2])
    })
    // The first went alone (nothing was in flight); the two asked meanwhile went in one.
    expect(writes).toBe(2)
  })

  it('while frozen no transaction begins; on resume the commits run, once each', async () => {
    fresh()
    const s = store()
    const seen = await watch(s)
    freeze()
    let done = 0
    const commits = [s.commit([], put('a')), s.commit([], put('b'))].map((p) => p.then((r) => (done++, r)))
    await tick(80)
    expect(done).toBe(0)
    resume()
    expect((await Promise.all(commits)).every((r) => r.ok)).toBe(true)
    expect(seen).toEqual([1, 2])
  })

  it('frozen while the database opens: nothing begins until the page resumes', async () => {
    fresh()
    const s = store()
    let done = false
    const committing = s.commit([], put('a')).then(() => (done = true))
    freeze()
    await tick(80)
    expect(done).toBe(false)
    resume()
    await committing
  })

  it('frozen twice before one resume: what waited since the first freeze runs at the resume; a resume with no freeze only wakes', async () => {
    fresh()
    const s = store()
    const seen = await watch(s)
    freeze()
    const committing = s.commit([], put('a'))
    freeze()
    resume()
    expect((await committing).ok).toBe(true)
    resume()
    await tick()
    expect(seen).toEqual([1])
  })

  it('a transaction open at the freeze is aborted and run again once the page resumes: written once', async () => {
    fresh()
    const s = store()
    await s.db()
    for (let i = 0; i < 3; i++) expect(await freezeMidTransaction((fn) => s.run(fn), `k${i}`)).toEqual({ atFreeze: 1, ran: 2 })
  })

  it('an error no freeze caused is not run again', async () => {
    fresh()
    const s = store()
    let ran = 0
    await expect(s.run(() => (ran++, Promise.reject(new Error('once'))))).rejects.toThrow('once')
    expect(ran).toBe(1)
  })

  it('a wake reads what nobody announced: on resume, and when the page is shown again, not when it is hidden (visibilityState faked by the test)', async () => {
    fresh()
    const s = store()
    const seen = await watch(s)
    await unannounced(1, 'a')
    await tick()
    expect(seen).toEqual([])
    freeze()
    resume()
    await tick()
    expect(seen).toEqual([1])
    await unannounced(2, 'b')
    document.dispatchEvent(new Event('visibilitychange'))
    await tick()
    expect(seen).toEqual([1, 2])
    await unannounced(3, 'c')
    const own = Object.getOwnPropertyDescriptor(Document.prototype, 'visibilityState')!
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' })
    try {
      document.dispatchEvent(new Event('visibilitychange'))
      await tick()
      expect(seen).toEqual([1, 2])
    } finally {
      delete (document as { visibilityState?: unknown }).visibilityState
      expect(Object.getOwnPropertyDescriptor(Document.prototype, 'visibilityState')).toEqual(own)
    }
    document.dispatchEvent(new Event('visibilitychange'))
    await tick()
    expect(seen).toEqual([1, 2, 3])
  })

  it("another store's commit (another tab's) is heard on the channel `zaris:idb:<namespace>` and reaches this store's watchers without a read", async () => {
    fresh()
    const here = store()
    const elsewhere = store({ ...systemClock })
    const seen = await watch(here)
    const raw = new BroadcastChannel(`zaris:idb:${ns}`)
    const posted: Array<{ records: Array<{ revision: number }> }> = []
    raw.onmessage = (ev) => posted.push(ev.data)
    await elsewhere.commit([], put('k'))
    await tick()
    raw.close()
    expect(posted.map((o) => o.records.map((r) => r.revision))).toEqual([[1]])
    expect(seen).toEqual([1])
  })

  it('a store opened on a database that holds an entry with a deadline expires it then, with no commit or wake of its own', async () => {
    fresh()
    const before = store()
    await before.commit([], [{ type: 'set', key: 'k', value: 1, ttl: 150 }])
    await before.release()
    acquired.splice(0, 1)
    const s = store()
    const seen: WatchEvent[] = []
    await s.db()
    await s.feed.subscribe('', { event: (e) => seen.push(e), error: () => {} })
    await tick(300)
    expect(seen.map((e) => `${e.type} ${e.key} ${e.revision}`)).toEqual(['expire k 2'])
  })

  it("a commit reads the log from the highest revision this page has seen, its own or another store's, never from a lower one announced late", async () => {
    fresh()
    const s = store()
    const other = store({ ...systemClock })
    await s.commit([], put('a'))
    await other.commit([], put('b'))
    await tick()
    const from = await logReadsFrom(async () => {
      await s.commit([], put('c'))
      announceLate(ns, 1)
      await tick()
      await s.commit([], put('d'))
    })
    expect(from).toEqual([2, 3])
  })

  it('the expiry timer follows the earliest deadline: none for a commit without one, an earlier one replaces it, a later one leaves it (a clock moved by hand)', async () => {
    fresh()
    const manual = manualClock()
    const s = store(manual.clock)
    const seen = await watch(s)
    await s.commit([], put('plain'))
    expect(manual.pending()).toEqual([])
    await s.commit([], [{ type: 'set', key: 'late', value: 1, ttl: 250 }])
    expect(manual.pending()).toEqual([250])
    await s.commit([], [{ type: 'set', key: 'soon', value: 1, ttl: 50 }])
    expect(manual.pending()).toEqual([50])
    await s.commit([], [{ type: 'set', key: 'later', value: 1, ttl: 400 }])
    expect(manual.pending()).toEqual([50])
    manual.advance(50)
    await tick()
    expect(seen).toEqual([1, 2, 3, 4, 5])
    expect(manual.pending()).toEqual([200])
  })

  it('a commit that lands after the release arms no timer (a clock moved by hand)', async () => {
    fresh()
    const manual = manualClock()
    const s = store(manual.clock)
    await s.db()
    const landing = s.commit([], [{ type: 'set', key: 'k', value: 1, ttl: 50 }])
    await s.release()
    acquired.splice(0, 1)
    expect((await landing).ok).toBe(true)
    expect(manual.pending()).toEqual([])
  })

  it('wakes that come while a sweep runs cost one more sweep after it, not one each; a store never used opens nothing on a wake', async () => {
    fresh()
    const unused = store()
    resume()
    await tick()
    expect((await indexedDB.databases()).map((d) => d.name)).not.toContain(`zaris:${ns}`)
    await unused.db()
    await tick()
    const writes = await writesDuring(async () => {
      resume()
      resume()
      resume()
      await tick(100)
    })
    expect(writes).toBe(2)
  })

  it('an expiry timer that fires before the deadline (a clock whose timers run 20 ms early, by hand) sweeps nothing and is armed again: the entry expires', async () => {
    fresh()
    const early: Clock = { ...systemClock, setTimeout: (fn, ms) => systemClock.setTimeout(fn, ms - 20) }
    const s = store(early)
    const seen = await watch(s)
    await s.commit([], [{ type: 'set', key: 'k', value: 1, ttl: 60 }])
    await tick(250)
    expect(seen).toEqual([1, 2])
  })

  it('a wake also sweeps what expired meanwhile; a sweep with nothing due tells no tab anything', async () => {
    fresh()
    const s = store()
    const seen: WatchEvent[] = []
    await s.db()
    await s.feed.subscribe('', { event: (e) => seen.push(e), error: () => {} })
    const channel = new BroadcastChannel(`zaris:idb:${ns}`)
    const posted: unknown[] = []
    channel.onmessage = (ev) => posted.push(ev.data)
    freeze()
    resume()
    await tick()
    expect(posted).toEqual([])
    await s.commit([], [{ type: 'set', key: 'k', value: 1, ttl: 40 }])
    await tick(120)
    channel.close()
    expect(seen.map((e) => `${e.type} ${e.key}`)).toEqual(['put k', 'expire k'])
  })

  it('after release, no freeze, wake or expiry timer of it runs: nothing more is read or written', async () => {
    fresh()
    const s = store()
    await s.commit([], [{ type: 'set', key: 'k', value: 1, ttl: 40 }])
    await s.release()
    acquired.splice(0, 1)
    freeze()
    resume()
    document.dispatchEvent(new Event('visibilitychange'))
    await tick(100)
    // The entry expired, and nobody swept it: its log still ends at the put.
    const last = await new Promise<number>((resolve) => {
      const open = indexedDB.open(`zaris:${ns}`)
      open.onsuccess = () => {
        const r = open.result.transaction('log').objectStore('log').openCursor(null, 'prev')
        r.onsuccess = () => (resolve(r.result?.value.revision ?? 0), open.result.close())
      }
    })
    expect(last).toBe(1)
  })

  it('the last release takes back its listeners on the document, clears its timer and closes its connection (spies on the document and IDBDatabase)', async () => {
    fresh()
    const manual = manualClock()
    const ours = ['freeze', 'resume', 'visibilitychange']
    const on: Array<[string, unknown]> = []
    const add = document.addEventListener
    const remove = document.removeEventListener
    const close = IDBDatabase.prototype.close
    let closed = 0
    document.addEventListener = function (this: Document, ...args: Parameters<typeof add>) {
      if (ours.includes(args[0])) on.push([args[0], args[1]])
      return add.apply(this, args)
    } as typeof add
    document.removeEventListener = function (this: Document, ...args: Parameters<typeof remove>) {
      const i = on.findIndex(([type, fn]) => type === args[0] && fn === args[1])
      if (i >= 0) on.splice(i, 1)
      return remove.apply(this, args)
    } as typeof remove
    IDBDatabase.prototype.close = function (this: IDBDatabase) {
      closed++
      return close.call(this)
    }
    try {
      const s = SharedStore.acquire(ns, 100, manual.clock)
      await s.commit([], [{ type: 'set', key: 'k', value: 1, ttl: 50 }])
      expect(on.map(([type]) => type).sort()).toEqual(ours)
      expect(manual.pending()).toEqual([50])
      await s.release()
      expect(on).toEqual([])
      expect(manual.pending()).toEqual([])
      expect(closed).toBe(1)
    } finally {
      document.addEventListener = add
      document.removeEventListener = remove
      IDBDatabase.prototype.close = close
    }
  })

  it('a database another tab deleted: every call fails with UNAVAILABLE, naming it', async () => {
    fresh()
    const s = store()
    await s.commit([], put('k'))
    await deleteDb()
    await expect(s.commit([], put('k'))).rejects.toMatchObject({ code: 'UNAVAILABLE', message: `the IndexedDB database of "${ns}" was deleted or upgraded by another tab` })
  })

  it('a database that failed to open is opened again by the next call', async () => {
    fresh()
    // Another tab's newer version: this page cannot open it.
    await new Promise<void>((resolve) => {
      const open = indexedDB.open(`zaris:${ns}`, 999)
      open.onsuccess = () => (open.result.close(), resolve())
    })
    const s = store()
    await expect(s.commit([], put('k'))).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('IndexedDB refused the commit'), cause: { name: 'VersionError' } })
    await deleteDb()
    expect((await s.commit([], put('k'))).ok).toBe(true)
  })
})
