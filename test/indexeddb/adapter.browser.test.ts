/**
 * The IndexedDB adapter in real Chromium, several adapters on one namespace
 * standing in for tabs (each has its own connection and BroadcastChannel, as
 * a tab would). The multi-tab behaviour with real pages is in tabs.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Client, isZarisError, type Adapter, type WatchEvent } from 'zaris'
import { indexedDbAdapter } from 'zaris/indexeddb'
import { TRIM_EVERY } from '../../src/adapters/indexeddb/schema'

const opened: Array<{ close(): Promise<unknown> }> = []
const names: string[] = []

function namespace(): string {
  const ns = `t-${Math.random().toString(36).slice(2, 10)}`
  names.push(ns)
  return ns
}

function adapterOn(ns: string, options: { historySize?: number } = {}): Adapter {
  const a = indexedDbAdapter({ namespace: ns, ...options })
  opened.push(a)
  return a
}

function clientOn(ns: string, id?: string): Client {
  const c = new Client(adapterOn(ns), id ? { id } : {})
  opened.push(c)
  return c
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()))
  await Promise.all(
    names.splice(0).map(
      (ns) =>
        new Promise<void>((resolve) => {
          const r = indexedDB.deleteDatabase(`zaris:${ns}`)
          r.onsuccess = r.onerror = r.onblocked = () => resolve()
        }),
    ),
  )
})

function collect(adapter: Adapter, prefix: string, from?: number) {
  const events: WatchEvent[] = []
  const errors: Error[] = []
  const ready = adapter.watch(prefix, { event: (e) => events.push(e), error: (e) => errors.push(e) }, from)
  return { events, errors, ready }
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 5))
  }
}

describe('indexeddb adapter', () => {
  it('commits with a store-wide revision and created semantics, including fresh', async () => {
    const a = adapterOn(namespace())
    const r1 = await a.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: { n: 1 } }])
    expect(r1.ok && r1.revision).toBe(1)
    const r2 = await a.commit([], [{ type: 'set', key: 'k', value: 2 }, { type: 'set', key: 'j', value: 'x' }])
    expect(r2.ok && r2.entries.map((e) => [e.key, e.revision, e.created])).toEqual([
      ['k', 2, 1],
      ['j', 2, 2],
    ])
    const r3 = await a.commit([{ key: 'k', created: 1 }], [{ type: 'set', key: 'k', value: 3, fresh: true }])
    expect(r3.ok && r3.entries[0]!.created).toBe(3)
    const bad = await a.commit([{ key: 'k', created: 1 }, { key: 'j', revision: 2 }], [{ type: 'delete', key: 'k' }])
    expect(bad.ok).toBe(false)
    if (!bad.ok) expect(bad.failed).toEqual([{ key: 'k', entry: { key: 'k', value: 3, revision: 3, created: 3 } }])
    const del = await a.commit([{ key: 'k', revision: 3 }], [{ type: 'delete', key: 'k' }])
    expect(del.ok && del.deleted).toEqual(['k'])
    const again = await a.commit([], [{ type: 'set', key: 'k', value: 5 }])
    expect(again.ok && again.entries[0]).toEqual({ key: 'k', value: 5, revision: 5, created: 5 })
    expect((await a.list('')).entries.map((e) => e.key)).toEqual(['j', 'k'])
  })

  it('a page that missed 40 revisions of announcements (back from the back/forward cache) commits after the last, not after its stale hint', async () => {
    const ns = namespace()
    const a = adapterOn(ns)
    const first = await a.commit([], [{ type: 'set', key: 'k', value: 0 }])
    expect(first.ok && first.revision).toBe(1)
    // Another tab's 40 commits, whose announcements this page never heard: their log records, written directly.
    await new Promise<void>((resolve, reject) => {
      const open = indexedDB.open(`zaris:${ns}`)
      open.onerror = () => reject(open.error)
      open.onsuccess = () => {
        const tx = open.result.transaction('log', 'readwrite')
        for (let revision = 2; revision <= 41; revision++) tx.objectStore('log').put({ revision, events: [] })
        tx.oncomplete = () => (open.result.close(), resolve())
        tx.onerror = () => reject(tx.error)
      }
    })
    const next = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    expect(next.ok && next.revision).toBe(42)
    expect((await a.get('k'))?.revision).toBe(42)
  })

  it('a commit sent again with its request id is answered as the first time, not applied again', async () => {
    const a = adapterOn(namespace())
    const first = await a.commit([], [{ type: 'set', key: 'k', value: 1 }], { requestId: 'r-1' })
    const again = await a.commit([], [{ type: 'set', key: 'k', value: 1 }], { requestId: 'r-1' })
    expect(again).toEqual(first)
    expect((await a.get('k'))?.revision).toBe(1)
    const other = await a.commit([], [{ type: 'set', key: 'k', value: 2 }], { requestId: 'r-2' })
    expect(other.ok && other.revision).toBe(2)
  })

  it("a commit's values are its own: changing the value given, or the one answered, changes neither the store nor what watchers see", async () => {
    const a = adapterOn(namespace())
    const w = collect(a, 'k')
    await w.ready
    const given = { n: 1 }
    const committing = a.commit([], [{ type: 'set', key: 'k', value: given }])
    given.n = 2
    const r = await committing
    if (!r.ok) throw new Error('the commit failed')
    ;(r.entries[0]!.value as { n: number }).n = 3
    await until(() => w.events.length === 1)
    expect(w.events[0]).toMatchObject({ type: 'put', key: 'k', value: { n: 1 } })
    expect((await a.get('k'))?.value).toEqual({ n: 1 })
  })

  it('rejects a commit that names a key twice', async () => {
    const a = adapterOn(namespace())
    const err = await a
      .commit([], [{ type: 'set', key: 'k', value: 1 }, { type: 'delete', key: 'k' }])
      .catch((e: unknown) => e)
    expect(isZarisError(err, 'INVALID_ARGUMENT')).toBe(true)
  })

  it('lists by prefix in key order, including prefixes ending in \\uffff', async () => {
    const a = adapterOn(namespace())
    for (const k of ['b', 'a:2', 'a:1', 'a', 'a\uffff', 'a\uffff\uffff', 'ab']) {
      await a.commit([], [{ type: 'set', key: k, value: k }])
    }
    expect((await a.list('a:')).entries.map((e) => e.key)).toEqual(['a:1', 'a:2'])
    expect((await a.list('a\uffff')).entries.map((e) => e.key)).toEqual(['a\uffff', 'a\uffff\uffff'])
    expect((await a.list('')).entries.length).toBe(7)
  })

  it('keeps entries and the revision across a reopen (as across a reload)', async () => {
    const ns = namespace()
    const a = adapterOn(ns)
    await a.commit([], [{ type: 'set', key: 'k', value: 'v', ttl: 60_000 }])
    await a.commit([], [{ type: 'set', key: 'j', value: 'w' }])
    await a.close()
    const b = adapterOn(ns)
    const e = await b.get('k')
    expect(e?.value).toBe('v')
    expect(e!.ttl).toBeGreaterThan(50_000)
    const r = await b.commit([], [{ type: 'set', key: 'k', value: 'v2' }])
    expect(r.ok && r.revision).toBe(3)
  })

  it('expires an entry for every reader at once, with exactly one expire event seen by every "tab"', async () => {
    const ns = namespace()
    const tabs = [adapterOn(ns), adapterOn(ns), adapterOn(ns)]
    const watches = tabs.map((t) => collect(t, 'e'))
    await Promise.all(watches.map((w) => w.ready))
    const r = await tabs[0]!.commit([], [{ type: 'set', key: 'e1', value: 1, ttl: 80 }])
    expect(r.ok).toBe(true)
    await new Promise((res) => setTimeout(res, 90))
    // Absent to every read even before any tab has committed the expiry.
    expect(await tabs[1]!.get('e1')).toBeUndefined()
    expect(await tabs[2]!.list('e')).toEqual({ entries: [], more: false })
    await until(() => watches.every((w) => w.events.length >= 2))
    await new Promise((res) => setTimeout(res, 100))
    for (const w of watches) {
      expect(w.events.map((e) => [e.type, e.revision])).toEqual([
        ['put', 1],
        ['expire', 2],
      ])
    }
    const next = await tabs[2]!.commit([], [{ type: 'set', key: 'x', value: 1 }])
    expect(next.ok && next.revision).toBe(3)
  })

  it('a commit that reads an expired entry expires it first (its own revision, one expire event) and counts it absent', async () => {
    // A store clock whose timers never fire: no sweep can run, so what happens is the commit's doing.
    let now = 1_000_000
    const clock = { now: () => now, setTimeout: () => ({}) as never, clearTimeout: () => {} }
    const ns = namespace()
    const a = indexedDbAdapter({ namespace: ns, clock })
    opened.push(a)
    const w = collect(a, '')
    await w.ready
    await a.commit([], [{ type: 'set', key: 'k', value: 1, ttl: 50 }, { type: 'set', key: 'j', value: 1, ttl: 50 }])
    now += 100
    const taken = await a.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: 2 }])
    expect(taken.ok && taken.revision).toBe(3)
    expect(taken.ok && taken.entries[0]!.created).toBe(3)
    const refused = await a.commit([{ key: 'j', revision: 1 }], [{ type: 'set', key: 'j', value: 2 }])
    expect(refused).toEqual({ ok: false, failed: [{ key: 'j', entry: undefined }] })
    const again = await a.commit([{ key: 'j', revision: null }], [{ type: 'set', key: 'j', value: 3 }])
    expect(again.ok && again.revision).toBe(5)
    await until(() => w.events.length >= 6)
    expect(w.events.map((e) => [e.type, e.key, e.revision])).toEqual([
      ['put', 'k', 1],
      ['put', 'j', 1],
      ['expire', 'k', 2],
      ['put', 'k', 3],
      ['expire', 'j', 4],
      ['put', 'j', 5],
    ])
  })

  it("a read that finds an entry past its deadline that this page never armed a timer for (another tab's, unannounced) has it swept at once: a get, then a list", async () => {
    // The store's time moved by hand; its timers are real.
    let now = 1_000_000
    const clock = { now: () => now, setTimeout: (fn: () => void, ms: number) => setTimeout(fn, Math.max(0, ms)) as never, clearTimeout: (h: never) => clearTimeout(h) }
    const ns = namespace()
    const a = indexedDbAdapter({ namespace: ns, clock })
    opened.push(a)
    const w = collect(a, '')
    await w.ready
    await a.commit([], [{ type: 'set', key: 'opened', value: 1 }])
    /** Another tab's entry of deadline now + 50, whose announcement this page never heard: written directly. */
    const unannounced = (key: string, revision: number) =>
      new Promise<void>((resolve, reject) => {
        const open = indexedDB.open(`zaris:${ns}`)
        open.onsuccess = () => {
          const tx = open.result.transaction(['log', 'entries'], 'readwrite')
          tx.objectStore('log').put({ revision, events: [{ type: 'put', key, revision, value: 1, created: revision, ttl: 50 }] })
          tx.objectStore('entries').put({ key, value: 1, revision, created: revision, ttl: 50, expiresAt: now + 50 })
          tx.oncomplete = () => (open.result.close(), resolve())
          tx.onerror = () => reject(tx.error)
        }
      })
    await unannounced('got', 2)
    now += 100
    expect(await a.get('got')).toBeUndefined()
    await until(() => w.events.some((e) => e.type === 'expire'))
    await unannounced('listed', 4)
    now += 100
    expect((await a.list('')).entries.map((e) => e.key)).toEqual(['opened'])
    await until(() => w.events.length >= 5)
    expect(w.events.map((e) => `${e.type} ${e.key} ${e.revision}`)).toEqual(['put opened 1', 'put got 2', 'expire got 3', 'put listed 4', 'expire listed 5'])
  })

  it('trims the change log to about historySize records, and still replays the last historySize revisions', async () => {
    const ns = namespace()
    const a = adapterOn(ns, { historySize: 5 })
    for (let n = 0; n < 150; n++) await a.commit([], [{ type: 'set', key: 'k', value: n }])
    const count = await new Promise<number>((resolve, reject) => {
      const open = indexedDB.open(`zaris:${ns}`)
      open.onerror = () => reject(open.error)
      open.onsuccess = () => {
        const r = open.result.transaction('log').objectStore('log').count()
        r.onsuccess = () => {
          open.result.close()
          resolve(r.result)
        }
      }
    })
    // Trimmed to the last 5 when the revision passes a multiple of TRIM_EVERY (64), not on every commit:
    // at 128 to 124..128, and 22 records since.
    expect(count).toBe(150 - (Math.floor(150 / TRIM_EVERY) * TRIM_EVERY - 5))
    const recent = collect(a, 'k', 145)
    await recent.ready
    await until(() => recent.events.length >= 5)
    expect(recent.events.map((e) => e.revision)).toEqual([146, 147, 148, 149, 150])
    const old = collect(a, 'k', 140)
    await old.ready
    expect(old.errors).toHaveLength(1)
    expect(isZarisError(old.errors[0], 'COMPACTED')).toBe(true)
  })

  it('upgrades a version-1 database (revision in a meta store): entries kept, the revision keeps rising', async () => {
    for (const logged of [true, false]) {
      const ns = namespace()
      await new Promise<void>((resolve, reject) => {
        const open = indexedDB.open(`zaris:${ns}`, 1)
        open.onupgradeneeded = () => {
          const db = open.result
          db.createObjectStore('entries', { keyPath: 'key' }).createIndex('expiresAt', 'expiresAt')
          db.createObjectStore('meta').put(7, 'revision')
          const log = db.createObjectStore('log', { keyPath: 'revision' })
          if (logged) log.put({ revision: 7, events: [{ type: 'put', key: 'k', revision: 7, value: 'v', created: 6 }] })
          open.transaction!.objectStore('entries').put({ key: 'k', value: 'v', revision: 7, created: 6 })
        }
        open.onerror = () => reject(open.error)
        open.onsuccess = () => {
          open.result.close()
          resolve()
        }
      })
      const a = adapterOn(ns)
      const e = await a.get('k')
      expect(e).toEqual({ key: 'k', value: 'v', revision: 7, created: 6 })
      const r = await a.commit([{ key: 'k', created: 6 }], [{ type: 'set', key: 'k', value: 'w' }])
      expect(r.ok && r.revision).toBe(8)
    }
  })

  it('expires with nobody writing and nobody reading (each tab runs an expiry timer)', async () => {
    const ns = namespace()
    const writer = adapterOn(ns)
    const watcher = collect(adapterOn(ns), '')
    await watcher.ready
    await writer.commit([], [{ type: 'set', key: 'a', value: 1, ttl: 50 }, { type: 'set', key: 'b', value: 1, ttl: 30 }])
    await until(() => watcher.events.length >= 4)
    expect(watcher.events.map((e) => [e.type, e.key, e.revision])).toEqual([
      ['put', 'a', 1],
      ['put', 'b', 1],
      ['expire', 'b', 2],
      ['expire', 'a', 3],
    ])
  })

  it('delivers every tab\'s commits to every watcher in revision order, none lost or doubled', async () => {
    const ns = namespace()
    const tabs = [adapterOn(ns), adapterOn(ns), adapterOn(ns), adapterOn(ns)]
    const watches = tabs.map((t) => collect(t, 'c:'))
    await Promise.all(watches.map((w) => w.ready))
    const per = 40
    await Promise.all(
      tabs.map(async (t, i) => {
        for (let n = 0; n < per; n++) await t.commit([], [{ type: 'set', key: `c:${i}`, value: n }])
      }),
    )
    await tabs[0]!.commit([], [{ type: 'set', key: 'other', value: 1 }])
    const total = tabs.length * per
    await until(() => watches.every((w) => w.events.length >= total))
    await new Promise((res) => setTimeout(res, 50))
    for (const w of watches) {
      expect(w.events.map((e) => e.revision)).toEqual(Array.from({ length: total }, (_, i) => i + 1))
      expect(w.errors).toEqual([])
    }
  })

  it('replays from a revision, and says plainly when that history is gone', async () => {
    const ns = namespace()
    const a = adapterOn(ns, { historySize: 5 })
    for (let n = 0; n < 8; n++) await a.commit([], [{ type: 'set', key: `k${n}`, value: n }])
    const replay = collect(adapterOn(ns, { historySize: 5 }), 'k', 4)
    await replay.ready
    await until(() => replay.events.length === 4)
    expect(replay.events.map((e) => e.revision)).toEqual([5, 6, 7, 8])
    const old = collect(adapterOn(ns, { historySize: 5 }), 'k', 1)
    await old.ready
    expect(old.errors).toHaveLength(1)
    expect(isZarisError(old.errors[0], 'COMPACTED')).toBe(true)
  })

  it('ownerGone resolves when the owner\'s client closes, not while it lives', async () => {
    const ns = namespace()
    const holder = clientOn(ns, 'holder-1')
    const waiter = adapterOn(ns)
    expect(waiter.capabilities?.ownerGone).toBe(true)
    const lock = await holder.locks.acquire('lock:a', { ttl: 60_000 })
    expect(lock).not.toBeNull()
    let gone = false
    const stop = new AbortController()
    const p = waiter.ownerGone!('holder-1', stop.signal).then(() => (gone = true))
    await new Promise((r) => setTimeout(r, 100))
    expect(gone).toBe(false)
    // The adapter closing is what a closed tab looks like to the Web Locks API.
    await holder.adapter.close()
    await p
    expect(gone).toBe(true)
  })

  it('a waiter takes a lock over at once when its holder\'s client is gone', async () => {
    const ns = namespace()
    const holder = clientOn(ns, 'tab-a')
    const other = clientOn(ns, 'tab-b')
    const lock = await holder.locks.acquire('lock:a', { ttl: 30_000 })
    expect(lock).not.toBeNull()
    const waiting = other.locks.acquire('lock:a', { wait: 20_000, ttl: 30_000 })
    await new Promise((r) => setTimeout(r, 50))
    const t0 = performance.now()
    await holder.adapter.close() // no release: as if the tab died
    const taken = await waiting
    const ms = performance.now() - t0
    expect(taken).not.toBeNull()
    expect(taken!.token).toBeGreaterThan(lock!.token)
    console.log(`takeover after the holder's adapter closed: ${ms.toFixed(1)} ms (TTL 30000 ms)`)
  })

  it('lets exactly one of many clients win a race for a lock', async () => {
    const ns = namespace()
    const clients = Array.from({ length: 6 }, (_, i) => clientOn(ns, `c${i}`))
    const locks = await Promise.all(clients.map((c) => c.locks.acquire('lock:race', { ttl: 10_000 })))
    expect(locks.filter((l) => l !== null)).toHaveLength(1)
  })

  it('a store whose log reaches Number.MAX_SAFE_INTEGER refuses writes with REVISION_EXHAUSTED; reads and other commits of its batch go on', async () => {
    const ns = namespace()
    const a = adapterOn(ns)
    await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    // The revision is the last key of the log: put a record there, as a store that ran that long would have.
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const r = indexedDB.open(`zaris:${ns}`)
      r.onsuccess = () => resolve(r.result)
      r.onerror = () => reject(r.error)
    })
    await new Promise<void>((resolve, reject) => {
      const tx = db.transaction('log', 'readwrite')
      tx.objectStore('log').put({ revision: Number.MAX_SAFE_INTEGER - 1, events: [] })
      tx.oncomplete = () => resolve()
      tx.onerror = () => reject(tx.error)
    })
    db.close()
    const fresh = adapterOn(ns) // reads the revision anew
    const last = await fresh.commit([], [{ type: 'add', key: 'n', delta: 1 }])
    expect(last.ok && last.revision).toBe(Number.MAX_SAFE_INTEGER)
    // Three commits in one batch: the refused ones write nothing and do not fail the others' reads.
    const results = await Promise.allSettled([
      fresh.commit([{ key: 'k', revision: 0 }], [{ type: 'delete', key: 'k' }]),
      fresh.commit([], [{ type: 'set', key: 'b', value: 2 }]),
      fresh.commit([], [{ type: 'add', key: 'n', delta: 1 }]),
    ])
    expect(results[0]).toMatchObject({ status: 'fulfilled', value: { ok: false } })
    expect(results[1]).toMatchObject({ status: 'rejected', reason: { code: 'REVISION_EXHAUSTED' } })
    expect(results[2]).toMatchObject({ status: 'rejected', reason: { code: 'REVISION_EXHAUSTED' } })
    expect(isZarisError((results[1] as PromiseRejectedResult).reason, 'REVISION_EXHAUSTED')).toBe(true)
    expect(await fresh.get('b')).toBeUndefined()
    expect((await fresh.get('n'))?.value).toBe(1)
    expect((await fresh.get('k'))?.value).toBe(1)
  })

  it('a refused add in a batch fails only its own commit', async () => {
    const ns = namespace()
    const a = adapterOn(ns)
    await a.commit([], [{ type: 'set', key: 'text', value: 'x' }])
    const results = await Promise.allSettled([
      a.commit([], [{ type: 'add', key: 'n', delta: 1 }]),
      a.commit([], [{ type: 'add', key: 'text', delta: 1 }]),
      a.commit([], [{ type: 'add', key: 'n', delta: 1 }]),
    ])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('"text"') })
    expect((await a.get('n'))?.value).toBe(2)
    const revisions = results.flatMap((r) => (r.status === 'fulfilled' && r.value.ok ? [r.value.revision] : []))
    expect(revisions[1]! - revisions[0]!).toBe(1) // the refused one took no revision
  })

  it('a commit held behind another transaction judges expiry when it runs, not when it was called: a renewal that runs after the TTL fails', async () => {
    const ns = namespace()
    const a = adapterOn(ns)
    const put = await a.commit([], [{ type: 'set', key: 'lock', value: null, owner: 'o', ttl: 200 }])
    if (!put.ok) throw new Error('the first put failed')
    const created = put.entries[0]!.created
    // Another connection keeps a readwrite transaction on the store busy past the TTL (as another tab's would).
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const r = indexedDB.open(`zaris:${ns}`)
      r.onsuccess = () => resolve(r.result)
      r.onerror = () => reject(r.error)
    })
    const until = Date.now() + 400
    const busy = new Promise<void>((resolve) => {
      const tx = db.transaction(['entries', 'log'], 'readwrite')
      const spin = () => {
        if (Date.now() < until) tx.objectStore('entries').get('lock').onsuccess = spin
      }
      spin()
      tx.oncomplete = () => resolve()
    })
    // Called while the entry is alive; it runs once the busy transaction ends, 200 ms after the entry expired.
    const renewal = await a.commit([{ key: 'lock', created }], [{ type: 'set', key: 'lock', value: null, owner: 'o', ttl: 200 }])
    await busy
    db.close()
    expect(renewal.ok).toBe(false)
    expect(await a.get('lock')).toBeUndefined()
  })
})
