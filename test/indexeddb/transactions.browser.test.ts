/**
 * The store's transactions (src/adapters/indexeddb/transactions.ts) driven
 * directly in Chromium, for what the adapter above them never lets happen:
 * a write that throws half way (the adapter copies values first, so only a
 * bug could), and a transaction aborted from outside (a freeze does that to
 * a tab's open transactions). Either way nothing of it may land, and the
 * caller must hear of it rather than wait forever.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { openStore, type Database } from '../../src/adapters/indexeddb/schema'
import { commitBatch, readEntry, readLog } from '../../src/adapters/indexeddb/transactions'
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
  })
})
