/**
 * The node's durable store on its own, closed and reopened on a real file:
 * revisions and TTLs after a restart (issue point 7, on a ManualClock),
 * watch history kept in the file, request ids remembered.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { Client, isZarisError, type WatchEvent } from 'zaris'
import { ManualClock } from 'zaris/testing'
import Database from 'better-sqlite3'
import { openSqlite } from '../../src/adapters/sqlite'
import { storeDir } from '../setup/store-dir'

const dir = storeDir('zaris-sqlite-')
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

test('history pages after a reopen come from the file, row by row, up to the store revision; older ones are CompactedError', async () => {
  const file = join(dir, 'history-pages.db')
  const db1 = await openSqlite(file, { historySize: 10 })
  const a1 = db1.adapter('h')
  // Enough that the file lets its oldest history go (it keeps at least historySize revisions).
  for (let i = 1; i <= 1_000; i++) await a1.commit([], [{ type: 'set', key: `k/${i % 4}`, value: i }, { type: 'set', key: `o/${i}`, value: i }])
  db1.close()
  const db2 = await openSqlite(file, { historySize: 10 })
  const a2 = db2.adapter('h')
  // Memory holds nothing from before the reopen: the file answers, a few rows at a time.
  const got: number[] = []
  let after = 995
  for (let pages = 0; ; pages++) {
    const page = await a2.history!('k/', after, { maxEvents: 1, maxBytes: Infinity })
    got.push(...page.events.map((e) => e.revision))
    expect(page.events.every((e) => e.key.startsWith('k/'))).toBe(true)
    if (!page.more) {
      expect(page.through).toBe(1_000)
      break
    }
    after = page.through
    expect(pages).toBeLessThan(10)
  }
  expect(got).toEqual([996, 997, 998, 999, 1_000])
  await expect(a2.history!('k/', 5, { maxEvents: 10, maxBytes: Infinity })).rejects.toMatchObject({ code: 'COMPACTED' })
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

test('group commit: concurrent commits share transactions, keep serial revisions, and a failed check in a group leaves the others alone', async () => {
  const file = join(dir, 'group.db')
  let syncs = 0
  const db1 = await openSqlite(file, { beforeSync: () => void syncs++ })
  const a = db1.adapter('g')
  const events: WatchEvent[] = []
  await a.watch('', collect(events))
  // Issued in one turn of the event loop: one transaction for all 20.
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      // Every 5th commit checks a key that was never written with a revision it cannot have: it must fail alone.
      i % 5 === 4
        ? a.commit([{ key: 'never', revision: 7 }], [{ type: 'set', key: `bad:${i}`, value: i }])
        : a.commit([{ key: `k:${i}`, revision: null }], [{ type: 'set', key: `k:${i}`, value: i }]),
    ),
  )
  expect(syncs).toBe(1)
  expect(results.filter((r) => !r.ok)).toHaveLength(4)
  const revisions = results.flatMap((r) => (r.ok ? [r.revision] : []))
  expect(revisions).toEqual(Array.from({ length: 16 }, (_, i) => i + 1)) // in call order, no gaps
  expect(events.map((e) => e.revision)).toEqual(revisions)
  expect(await a.get('bad:4')).toBeUndefined()
  db1.close()
  const db2 = await openSqlite(file)
  const b = db2.adapter('g')
  expect((await b.list('k:')).entries.map((e) => [e.key, e.revision])).toEqual(
    [...Array(20).keys()].filter((i) => i % 5 !== 4).map((i, n) => [`k:${i}`, n + 1]).sort((x, y) => (x[0]! < y[0]! ? -1 : 1)),
  )
  expect((await b.commit([], [{ type: 'set', key: 'next', value: 1 }])).ok && 'ok').toBe('ok')
  expect(db2.position('g').revision).toBe(17)
  db2.close()
})

test('nothing of a group is answered, shown to a watch or read before it is on disk', async () => {
  const file = join(dir, 'visible.db')
  const seen: string[] = []
  let db: Awaited<ReturnType<typeof openSqlite>> | undefined
  const events: WatchEvent[] = []
  db = await openSqlite(file, { beforeSync: () => void seen.push(`sync with ${events.length} events`) })
  const a = db.adapter('v')
  await a.watch('', collect(events))
  let answered = false
  const commit = a.commit([], [{ type: 'set', key: 'x', value: 1 }]).then((r) => {
    answered = true
    return r
  })
  expect(answered).toBe(false)
  expect(events).toEqual([])
  // A read in the same turn writes the group first, then reads.
  expect((await a.get('x'))?.value).toBe(1)
  expect(seen).toEqual(['sync with 0 events'])
  expect(events.map((e) => e.key)).toEqual(['x'])
  expect((await commit).ok).toBe(true)
  db.close()
})

test('a transaction that fails to reach the disk fails every commit in it, and memory goes back to the file', async () => {
  const file = join(dir, 'fail.db')
  let failNext = false
  const db = await openSqlite(file, {
    beforeSync: () => {
      if (failNext) {
        failNext = false
        throw new Error('injected: fsync failed')
      }
    },
  })
  const a = db.adapter('f')
  const before = await a.commit([], [{ type: 'set', key: 'kept', value: 1 }], { requestId: 'req-kept-001' })
  const events: WatchEvent[] = []
  await a.watch('', collect(events))
  failNext = true
  const lost = await Promise.allSettled([
    a.commit([], [{ type: 'set', key: 'lost:1', value: 1 }], { requestId: 'req-lost-001' }),
    a.commit([{ key: 'kept', revision: 1 }], [{ type: 'delete', key: 'kept' }]),
    a.commit([{ key: 'kept', revision: 99 }], [{ type: 'set', key: 'lost:2', value: 2 }]), // a failed check, told nothing either
  ])
  expect(lost.map((r) => r.status === 'rejected' && isZarisError(r.reason, 'UNAVAILABLE'))).toEqual([true, true, true])
  // No event of the lost group was shown; the watch ended so its owner resumes from what it saw.
  expect(events).toEqual([{ type: 'delete', key: 'error:UNAVAILABLE', revision: -1 }])
  expect(await a.get('lost:1')).toBeUndefined()
  expect(await a.get('kept')).toMatchObject({ value: 1, revision: 1 })
  // The request id of a lost commit is not remembered: a retry applies it, under the next revision.
  const retry = await a.commit([], [{ type: 'set', key: 'lost:1', value: 1 }], { requestId: 'req-lost-001' })
  expect(retry).toMatchObject({ ok: true, revision: 2 })
  expect(await a.commit([], [{ type: 'set', key: 'kept', value: 1 }], { requestId: 'req-kept-001' })).toEqual(before)
  db.close()
  const again = await openSqlite(file)
  expect(again.position('f').revision).toBe(2)
  expect(await again.adapter('f').get('lost:2')).toBeUndefined()
  again.close()
})

test('the same request id twice in one group is applied once', async () => {
  const db = await openSqlite(join(dir, 'dup.db'))
  const a = db.adapter('d')
  const [x, y] = await Promise.all([
    a.commit([], [{ type: 'set', key: 'n', value: 1 }], { requestId: 'req-dup-0001' }),
    a.commit([], [{ type: 'set', key: 'n', value: 1 }], { requestId: 'req-dup-0001' }),
  ])
  expect(y).toEqual(x)
  expect(db.position('d').revision).toBe(1)
  db.close()
})

test('after checkpoints and pruning: entries, empty commits and old request ids survive a reopen', async () => {
  const file = join(dir, 'checkpoint.db')
  const db1 = await openSqlite(file, { historySize: 10 })
  const a1 = db1.adapter('c')
  const remembered = await a1.commit([], [{ type: 'set', key: 'first', value: { deep: [1] }, owner: 'o', ttl: 60_000 }], { requestId: 'req-early-01' })
  // In rounds of 25 concurrent commits (groups), past two checkpoints and on for a replay after the last.
  for (let round = 0; round < 100; round++) {
    await Promise.all(
      Array.from({ length: 25 }, (_, j) => {
        const i = round * 25 + j
        return a1.commit([], [{ type: 'set', key: `k:${i % 7}`, value: i }, ...(i % 3 === 0 ? [{ type: 'delete' as const, key: `k:${(i + 1) % 7}` }] : [])])
      }),
    )
  }
  const empty = await a1.commit([], [{ type: 'delete', key: 'never-there' }]) // changes nothing, still a revision
  const state = (await a1.list('')).entries
  db1.close()
  const db2 = await openSqlite(file, { historySize: 10 })
  const a2 = db2.adapter('c')
  expect(db2.position('c').revision).toBe(empty.ok && empty.revision)
  expect((await a2.list('')).entries.map(({ ttl: _, ...e }) => e)).toEqual(state.map(({ ttl: _, ...e }) => e))
  const again = await a2.commit([], [{ type: 'set', key: 'first', value: { deep: [1] }, owner: 'o', ttl: 60_000 }], { requestId: 'req-early-01' })
  // The same answer (a remembered answer gives the TTL the entry was written with, the first the time left).
  expect(again).toMatchObject({ ok: true, revision: 1, deleted: [], entries: [{ key: 'first', value: { deep: [1] }, owner: 'o', revision: 1, created: 1, ttl: 60_000 }] })
  expect(remembered).toMatchObject({ ok: true, revision: 1, entries: [{ key: 'first', revision: 1 }] })
  expect(db2.position('c').revision).toBe(empty.ok && empty.revision) // not applied again
  db2.close()
})

test('a file written by schema 1 is upgraded in place: state, revision, epoch, history and request ids carry over', async () => {
  const file = join(dir, 'schema1.db')
  const old = new Database(file)
  old.pragma('journal_mode = WAL')
  // Schema 1 as the first release wrote it: the revision in zaris_stores, request ids in their own table.
  old.exec(`
    CREATE TABLE zaris_stores (ns TEXT PRIMARY KEY, revision INTEGER NOT NULL, compacted INTEGER NOT NULL DEFAULT 0, epoch TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE zaris_events (ns TEXT NOT NULL, revision INTEGER NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, key TEXT NOT NULL,
      value TEXT, created INTEGER, owner TEXT, ttl REAL, PRIMARY KEY (ns, revision, seq)) WITHOUT ROWID;
    CREATE TABLE zaris_entries (ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, revision INTEGER NOT NULL, created INTEGER NOT NULL,
      owner TEXT, ttl REAL, PRIMARY KEY (ns, key)) WITHOUT ROWID;
    CREATE TABLE zaris_requests (ns TEXT NOT NULL, id TEXT NOT NULL, at INTEGER NOT NULL, result TEXT NOT NULL);
    CREATE UNIQUE INDEX zaris_requests_id ON zaris_requests (ns, id);
    INSERT INTO zaris_stores VALUES ('m', 4, 0, 'epoch-of-v1');
    INSERT INTO zaris_events VALUES ('m', 1, 0, 'put', 'a', '1', 1, NULL, NULL), ('m', 2, 0, 'put', 'b', '{"x":2}', 2, 'o', 5000),
      ('m', 3, 0, 'delete', 'a', NULL, NULL, NULL, NULL);
    INSERT INTO zaris_entries VALUES ('m', 'b', '{"x":2}', 2, 2, 'o', 5000);
    PRAGMA user_version = 1;
  `)
  const answer = { ok: true, revision: 3, entries: [], deleted: ['a'] }
  old.prepare('INSERT INTO zaris_requests VALUES (?, ?, ?, ?)').run('m', 'req-v1-00001', Date.now(), JSON.stringify(answer))
  old.close()

  const db1 = await openSqlite(file)
  const a1 = db1.adapter('m')
  expect(db1.position('m')).toEqual({ revision: 4, epoch: 'epoch-of-v1' }) // revision 4 was a commit that changed nothing
  expect(await a1.get('b')).toMatchObject({ value: { x: 2 }, revision: 2, owner: 'o' })
  expect((await a1.get('b'))?.ttl).toBeGreaterThan(4_000) // the whole TTL again
  expect(await a1.get('a')).toBeUndefined()
  expect(await a1.commit([], [{ type: 'delete', key: 'a' }], { requestId: 'req-v1-00001' })).toEqual(answer)
  expect(await a1.commit([], [{ type: 'set', key: 'c', value: 3 }])).toMatchObject({ ok: true, revision: 5 })
  db1.close()

  const db2 = await openSqlite(file)
  const events: WatchEvent[] = []
  ;(await db2.adapter('m').watch('', collect(events), 0))()
  expect(events.map((e) => `${e.type}:${e.key}@${e.revision}`)).toEqual(['put:a@1', 'put:b@2', 'delete:a@3', 'put:c@5'])
  expect(db2.position('m').revision).toBe(5)
  db2.close()
})

test('a file written by a newer schema is refused with an error naming it', async () => {
  const file = join(dir, 'future.db')
  const future = new Database(file)
  future.pragma('user_version = 99')
  future.close()
  await expect(openSqlite(file)).rejects.toSatisfy((e) => isZarisError(e, 'UNSUPPORTED') && /schema 99/.test((e as Error).message))
})

test('the new-life rule and the add op survive a reopen: created, owner and TTL as written, the counter exact', async () => {
  const file = join(dir, 'life.db')
  const clock1 = new ManualClock()
  const db1 = await openSqlite(file, { clock: clock1 })
  const a = db1.adapter('ns')
  const lock = await a.commit([], [{ type: 'set', key: 'lock:x', value: null, ttl: 60_000, owner: 'holder' }])
  const plain = await a.commit([], [{ type: 'set', key: 'lock:x', value: 'plain' }]) // ownerless over owned: a new life
  const counter = await a.commit([], [{ type: 'set', key: 'n', value: 40, ttl: 60_000, owner: 'o' }])
  const added = await a.commit([], [{ type: 'add', key: 'n', delta: 2 }])
  const fresh = await a.commit([], [{ type: 'add', key: 'm', delta: -1 }])
  if (!lock.ok || !plain.ok || !counter.ok || !added.ok || !fresh.ok) throw new Error('commits failed')
  expect(plain.entries[0]!.created).toBe(plain.revision)
  await expect(a.commit([], [{ type: 'add', key: 'lock:x', delta: 1 }])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
  db1.close()

  const clock2 = new ManualClock()
  const db2 = await openSqlite(file, { clock: clock2 })
  const b = db2.adapter('ns')
  expect(await b.get('lock:x')).toEqual({ key: 'lock:x', value: 'plain', revision: plain.revision, created: plain.revision })
  expect(await b.get('n')).toMatchObject({ value: 42, revision: added.revision, created: counter.revision, owner: 'o', ttl: 60_000 })
  expect(await b.get('m')).toEqual({ key: 'm', value: -1, revision: fresh.revision, created: fresh.revision })
  const next = await b.commit([], [{ type: 'add', key: 'n', delta: 1 }])
  expect(next.ok && [next.revision, next.entries[0]!.value]).toEqual([fresh.revision + 1, 43])
  db2.close()
})

test('a malformed stored row fails the load with an error naming the file, the namespace and the key', async () => {
  for (const [damage, where, why] of [
    [`UPDATE zaris_events SET value = '{"broken' WHERE key = 'k:2'`, /namespace "ns-of-the-row", event of revision 2 for key "k:2"/, /its value is not JSON/],
    [`UPDATE zaris_events SET created = -5 WHERE key = 'k:2'`, /event of revision 2 for key "k:2"/, /not revisions/],
    [`UPDATE zaris_events SET value = '${'['.repeat(70)}${']'.repeat(70)}' WHERE key = 'k:2'`, /for key "k:2"/, /nested deeper than 64 levels/],
    [`INSERT INTO zaris_entries (ns, key, value, revision, created, owner, ttl) VALUES ('ns-of-the-row', 'k:9', 'nope', 1, 1, NULL, NULL)`, /namespace "ns-of-the-row", entry key "k:9"/, /its value is not JSON/],
  ] as const) {
    const file = join(dir, `damaged-${Math.random().toString(36).slice(2)}.db`)
    const db1 = await openSqlite(file)
    const a = db1.adapter('ns-of-the-row')
    for (let i = 1; i <= 3; i++) await a.commit([], [{ type: 'set', key: `k:${i}`, value: i }])
    db1.close()
    const raw = new Database(file)
    raw.exec(damage)
    raw.close()
    const err = await openSqlite(file).then(
      (db) => (db.close(), undefined),
      (e: Error) => e,
    )
    expect(err, damage).toMatchObject({ code: 'INTERNAL', message: expect.stringContaining(file) })
    expect(err!.message, damage).toMatch(where)
    expect(err!.message, damage).toMatch(why)
  }
})
