/**
 * The store's transactions (src/adapters/indexeddb/transactions.ts) driven
 * directly in Chromium, for what the adapter above them never lets happen:
 * a write that throws half way (the adapter copies values first, so only a
 * bug could), and a transaction aborted from outside (a freeze does that to
 * a tab's open transactions). Either way nothing of it may land, and the
 * caller must hear of it rather than wait forever. And the reads under the
 * adapter's list, replay and expiry timer, at the edges of their ranges.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { openStore, type Database } from '../../src/adapters/indexeddb/schema'
import { commitBatch, earliestExpiry, readEntry, readLog, readPrefix, sweepTx } from '../../src/adapters/indexeddb/transactions'
import { dropNamespace } from '../browser-harness/drop-namespace'

let ns = ''
let db: IDBDatabase | undefined
afterEach(async () => {
  db?.close()
  db = undefined
  await dropNamespace(ns)
})

async function open(): Promise<IDBDatabase> {
  ns = `tx-${Math.random().toString(36).slice(2, 10)}`
  db = await openStore(ns, () => {})
  return db
}

describe('indexeddb transactions', () => {
  it('a write that throws half way aborts the whole batch: nothing lands, and the batch rejects with that error', async () => {
    const db = await open()
    expect((await commitBatch(db, [{ checks: [], ops: [{ type: 'set', key: 'before', value: 0 }] }], Date.now, 1_000)).results[0]).toMatchObject({ ok: true, revision: 1 })
    const halfWay = commitBatch(
      db,
      [{ checks: [], ops: [{ type: 'set', key: 'a', value: 1 }, { type: 'set', key: 'b', value: (() => 'not cloneable') as never }] }],
      Date.now,
      1_000,
    )
    await expect(halfWay).rejects.toMatchObject({ name: 'DataCloneError' })
    expect(await readEntry(db, 'a'), 'the put before the throw landed').toBeUndefined()
    expect((await readLog(db, 0)).revision).toBe(1)
  })

  it('a transaction aborted from outside rejects with an AbortError that says so, and writes nothing', async () => {
    const db = await open()
    // A database whose transactions are aborted as soon as they start, as a freeze aborts a tab's.
    const aborting: Database = {
      transaction: (stores, mode, options) => {
        const tx = db.transaction(stores, mode, options)
        queueMicrotask(() => tx.abort())
        return tx
      },
    }
    const aborted = commitBatch(aborting, [{ checks: [], ops: [{ type: 'set', key: 'a', value: 1 }] }], Date.now, 1_000)
    const err = await aborted.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(DOMException)
    expect((err as DOMException).name).toBe('AbortError')
    expect((err as DOMException).message).toMatch(/aborted/)
    expect(await readEntry(db, 'a')).toBeUndefined()
    expect((await readLog(db, 0)).revision).toBe(0)
    const read = await readLog(aborting, 0).then(() => undefined, (e: unknown) => e)
    expect(read).toBeInstanceOf(DOMException)
    expect(read).toMatchObject({ name: 'AbortError', message: expect.stringMatching(/aborted/) })
  })

  it('reads a prefix after a key: exclusive, never past the prefix, for the empty prefix and one of \\uffff too', async () => {
    const db = await open()
    const keys = ['a', 'ab', 'ab1', 'ab2', 'ac', 'b', '\uffff', '\uffff1', '\uffff2']
    await commitBatch(db, [{ checks: [], ops: keys.map((key) => ({ type: 'set' as const, key, value: key })) }], Date.now, 1_000)
    const read = async (prefix: string, after?: string, count?: number) => (await readPrefix(db, prefix, after, count)).map((e) => e.key)
    expect(await read('ab')).toEqual(['ab', 'ab1', 'ab2'])
    expect(await read('ab', 'aa'), 'a key before the prefix: the whole prefix').toEqual(['ab', 'ab1', 'ab2'])
    expect(await read('ab', 'ab'), 'after the prefix itself').toEqual(['ab1', 'ab2'])
    expect(await read('ab', 'ab1')).toEqual(['ab2'])
    expect(await read('ab', 'ab2')).toEqual([])
    expect(await read('ab', 'ac'), 'a key past the prefix').toEqual([])
    expect(await read('ab', 'b')).toEqual([])
    expect(await read('', 'ac')).toEqual(['b', '\uffff', '\uffff1', '\uffff2'])
    expect(await read('', undefined, 2)).toEqual(['a', 'ab'])
    expect(await read('\uffff', '\uffff1')).toEqual(['\uffff2'])
    expect(await read('\uffff', 'b')).toEqual(['\uffff', '\uffff1', '\uffff2'])
  })

  it('reads the log after a revision (exclusive) with the revision, and the earliest deadline of any entry', async () => {
    const db = await open()
    expect(await earliestExpiry(db)).toBeUndefined()
    const now = Date.now()
    await commitBatch(db, [{ checks: [], ops: [{ type: 'set', key: 'late', value: 1, ttl: 60_000, owner: 'o' }] }], () => now, 1_000)
    await commitBatch(db, [{ checks: [], ops: [{ type: 'set', key: 'soon', value: 2, ttl: 30_000, owner: 'o' }] }], () => now, 1_000)
    await commitBatch(db, [{ checks: [], ops: [{ type: 'delete', key: 'late' }] }], () => now, 1_000)
    expect(await earliestExpiry(db)).toBe(now + 30_000)
    const log = await readLog(db, 1)
    expect(log.revision).toBe(3)
    expect(log.records.map((r) => r.revision)).toEqual([2, 3])
    expect(log.records[0]!.events).toEqual([{ type: 'put', key: 'soon', revision: 2, value: 2, created: 2, owner: 'o', ttl: 30_000 }])
    expect(log.records[1]!.events).toEqual([{ type: 'delete', key: 'late', revision: 3 }])
  })

  it('a put without owner or TTL says neither; a delete of a key not there writes nothing', async () => {
    const db = await open()
    const { results, outcome } = await commitBatch(db, [{ checks: [], ops: [{ type: 'set', key: 'k', value: 1 }, { type: 'delete', key: 'missing' }] }], Date.now, 1_000)
    expect(results[0]).toMatchObject({ ok: true, revision: 1, deleted: [] })
    // Strictly: what goes to the other tabs carries no field it has no value for.
    expect(outcome).toStrictEqual({ records: [{ revision: 1, events: [{ type: 'put', key: 'k', revision: 1, value: 1, created: 1 }] }] })
  })

  it('a check that the key is absent by `created: null` fails on an entry that is there, and holds where there is none', async () => {
    const db = await open()
    await commitBatch(db, [{ checks: [], ops: [{ type: 'set', key: 'k', value: 1 }] }], Date.now, 1_000)
    const { results } = await commitBatch(db, [{ checks: [{ key: 'k', created: null }], ops: [{ type: 'set', key: 'k', value: 2 }] }], Date.now, 1_000)
    expect(results[0]).toMatchObject({ ok: false, failed: [{ key: 'k' }] })
    expect((await readEntry(db, 'k'))?.value).toBe(1)
    const free = await commitBatch(db, [{ checks: [{ key: 'free', created: null }], ops: [{ type: 'set', key: 'free', value: 1 }] }], Date.now, 1_000)
    expect(free.results[0], 'the same check on a key that is not there').toMatchObject({ ok: true })
  })

  it('a sweep expires what is due, each with a revision, and tells the next deadline', async () => {
    const db = await open()
    const now = Date.now()
    await commitBatch(db, [{ checks: [], ops: [{ type: 'set', key: 'a', value: 1, ttl: 10 }, { type: 'set', key: 'b', value: 1, ttl: 20 }, { type: 'set', key: 'c', value: 1, ttl: 5_000 }] }], () => now, 1_000)
    const swept = await sweepTx(db, now + 50, 1_000)
    expect(swept.records).toEqual([
      { revision: 2, events: [{ type: 'expire', key: 'a', revision: 2 }] },
      { revision: 3, events: [{ type: 'expire', key: 'b', revision: 3 }] },
    ])
    expect(swept.nextExpiry).toBe(now + 5_000)
    expect(await readEntry(db, 'a')).toBeUndefined()
    expect((await readLog(db, 0)).revision).toBe(3)
  })

  it('a sweep with one revision left expires one entry and stops there', async () => {
    const db = await open()
    const now = Date.now()
    await commitBatch(db, [{ checks: [], ops: [{ type: 'set', key: 'a', value: 1, ttl: 10 }, { type: 'set', key: 'b', value: 1, ttl: 10 }] }], () => now, 1_000)
    // The store's log at the last revision but one (a store that has lived long, or was written so).
    await new Promise<void>((resolve, reject) => {
      const tx = db.transaction('log', 'readwrite')
      tx.objectStore('log').put({ revision: Number.MAX_SAFE_INTEGER - 1, events: [] })
      tx.oncomplete = () => resolve()
      tx.onerror = () => reject(tx.error)
    })
    const swept = await sweepTx(db, now + 50, 1_000)
    expect(swept.records).toEqual([{ revision: Number.MAX_SAFE_INTEGER, events: [{ type: 'expire', key: 'a', revision: Number.MAX_SAFE_INTEGER }] }])
    expect(await readEntry(db, 'b')).toBeDefined()
  })
})
