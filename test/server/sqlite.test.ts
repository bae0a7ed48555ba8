/**
 * The node's durable store on its own, closed and reopened on a real file:
 * revisions and TTLs after a restart (issue point 7, on a ManualClock),
 * watch history kept in the file, request ids remembered.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { Client, isZarisError, type WatchEvent } from 'zaris'
import { ManualClock } from 'zaris/testing'
import { openSqlite } from '../../src/adapters/sqlite'

const dir = mkdtempSync(join(tmpdir(), 'zaris-sqlite-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function collect(events: WatchEvent[]) {
  return { event: (e: WatchEvent) => events.push(e), error: (e: Error) => events.push({ type: 'delete', key: `error:${(e as { code?: string }).code}`, revision: -1 }) }
}

test('after a reopen: revisions go on, every TTL starts whole again, whatever time passed', async () => {
  const file = join(dir, 'ttl.db')
  const clock1 = new ManualClock()
  const db1 = await openSqlite(file, { clock: clock1 })
  const a = new Client(db1.adapter('ns'), { clock: clock1, id: 'a' })
  const lock = await a.locks.acquire('lock:x', { ttl: 1_000, autoRenew: false })
  await a.put('plain', 'v')
  await clock1.advance(900) // 100 ms left on the old clock
  db1.close()

  const clock2 = new ManualClock()
  await clock2.advance(1_000_000) // the new process's clock has nothing to do with the old one
  const db2 = await openSqlite(file, { clock: clock2 })
  const adapter = db2.adapter('ns')
  expect(await adapter.get('lock:x')).toMatchObject({ owner: 'a', created: lock!.token, ttl: 1_000 })
  await clock2.advance(999)
  expect(await adapter.get('lock:x')).toMatchObject({ ttl: 1 })
  await clock2.advance(1)
  expect(await adapter.get('lock:x')).toBeUndefined()
  expect((await adapter.get('plain'))?.value).toBe('v')
  const r = await adapter.commit([], [{ type: 'set', key: 'after', value: 1 }])
  // set lock, set plain, the expiry, this commit
  expect(r.ok && r.revision).toBe(4)
  db2.close()
})

test('the watch history is in the file: a resume after a reopen replays put, delete and expire in order', async () => {
  const file = join(dir, 'history.db')
  const clock = new ManualClock()
  const db1 = await openSqlite(file, { clock })
  const a1 = db1.adapter('h')
  await a1.commit([], [{ type: 'set', key: 'k:1', value: 1, owner: 'o' }])
  await a1.commit([], [{ type: 'set', key: 'k:2', value: 2, ttl: 50 }])
  await a1.commit([], [{ type: 'set', key: 'other', value: 0 }])
  await a1.commit([], [{ type: 'delete', key: 'k:1' }])
  await clock.advance(60)
  expect(await a1.get('k:2')).toBeUndefined() // expired, revision 5
  db1.close()

  const db2 = await openSqlite(file, { clock })
  const a2 = db2.adapter('h')
  const events: WatchEvent[] = []
  const stop = await a2.watch('k:', collect(events), 0)
  await a2.commit([], [{ type: 'set', key: 'k:3', value: 3 }])
  expect(events).toEqual([
    { type: 'put', key: 'k:1', revision: 1, value: 1, created: 1, owner: 'o' },
    { type: 'put', key: 'k:2', revision: 2, value: 2, created: 2, ttl: 50 },
    { type: 'delete', key: 'k:1', revision: 4 },
    { type: 'expire', key: 'k:2', revision: 5 },
    { type: 'put', key: 'k:3', revision: 6, value: 3, created: 6 },
  ])
  stop()
  const late: WatchEvent[] = []
  ;(await a2.watch('k:', collect(late), 4))()
  expect(late.map((e) => e.revision)).toEqual([5, 6])
  db2.close()
})

test('history older than the file keeps gives CompactedError', async () => {
  const file = join(dir, 'compact.db')
  const db1 = await openSqlite(file, { historySize: 10 })
  const a1 = db1.adapter('c')
  for (let i = 0; i < 1_000; i++) await a1.commit([], [{ type: 'set', key: 'k', value: i }])
  db1.close()
  const db2 = await openSqlite(file, { historySize: 10 })
  const a2 = db2.adapter('c')
  const old: WatchEvent[] = []
  await a2.watch('k', collect(old), 500)
  expect(old).toEqual([{ type: 'delete', key: 'error:COMPACTED', revision: -1 }])
  const recent: WatchEvent[] = []
  ;(await a2.watch('k', collect(recent), 995))()
  expect(recent.map((e) => e.revision)).toEqual([996, 997, 998, 999, 1000])
  db2.close()
})

test('a commit is remembered by request id across a reopen; other commits are not mistaken for it', async () => {
  const file = join(dir, 'ids.db')
  const clock = new ManualClock()
  const db1 = await openSqlite(file, { clock })
  const a1 = db1.adapter('r')
  await a1.commit([], [{ type: 'set', key: 'soon', value: 1, ttl: 10 }])
  await clock.advance(20) // due: its expiry is written before the next commit, not as it
  const first = await a1.commit([{ key: 'n', revision: null }], [{ type: 'set', key: 'n', value: 1 }], { requestId: 'req-0000001' })
  expect(first).toMatchObject({ ok: true, revision: 3 })
  db1.close()
  const db2 = await openSqlite(file, { clock })
  const a2 = db2.adapter('r')
  expect(await a2.commit([{ key: 'n', revision: null }], [{ type: 'set', key: 'n', value: 1 }], { requestId: 'req-0000001' })).toEqual(first)
  const other = await a2.commit([{ key: 'n', revision: null }], [{ type: 'set', key: 'n', value: 1 }], { requestId: 'req-0000002' })
  expect(other.ok).toBe(false)
  db2.close()
})

test('a closed store refuses calls', async () => {
  const db = await openSqlite(join(dir, 'closed.db'))
  const a = db.adapter('x')
  db.close()
  await expect(a.get('k')).rejects.toSatisfy((e) => isZarisError(e, 'CLOSED'))
})
