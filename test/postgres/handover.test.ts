/**
 * The Postgres store hands over (src/adapters/postgres/sql/park.ts,
 * parked.ts), against a real Postgres: a waiting commit parks as a row, and
 * the commit or expiry that lets it through applies it in its own
 * transaction, in `parkOrder`, and sends the answer by NOTIFY (or keeps it
 * for a poll behind a pooler). A waiter that gave up is never granted; one
 * past its wait is never applied by another's change; an abort or a close
 * takes it out of park.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest'
import { systemClock } from '../../src/core/time/clock'
import type { CommitResult } from 'zaris'
import { fence, postgresAdapter, type PostgresAdapter } from 'zaris/postgres'
import { until } from '../conformance/util'
import { PgBouncer } from './server'
import { countedPool, usePostgres } from './use-postgres'
import { absent, adapters, del, life, ok, park, parkedRows, set } from './handover-kit'

/** The take of `lock` by owner `hand`, as `park` takes a way (UTF-16BE key bytes, JSON value). */
const LOCK_WAY = JSON.stringify([{ ck: ['\\x006c006f0063006b'], cc: [false], cw: [null], ot: 's', ok: ['\\x006c006f0063006b'], ov: ['null'], ottl: [null], oown: ['\\x68616e64'], ofresh: [false], odelta: [null] }])

const db = usePostgres('h')

/** `w`'s place in line (`q.w`), then its take of `lock` parked behind it, as the core sends them. */
async function waitInLine(w: PostgresAdapter): Promise<{ place: number; take: Promise<CommitResult> }> {
  const place = ok(await w.commit([absent('q.w')], [set('q.w', 'w')])).revision
  let parked = false
  const take = w.commit([absent('lock'), life('q.w', place)], [set('lock', 'w'), del('q.w')], { ...park(), onParked: () => (parked = true) })
  await until(() => parked)
  return { place, take }
}

describe('the Postgres store hands over', () => {
  test("a release hands the lock to the parked take in the release's own transaction; a barger right after fails", async () => {
    await using store = await adapters(db, 3)
    const [h, w, b] = store.all as [PostgresAdapter, PostgresAdapter, PostgresAdapter]
    const ns = store.ns
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const { place, take } = await waitInLine(w)
    expect(await parkedRows(db, ns)).toBe(1)
    const t0 = performance.now()
    const release = ok(await h.commit([life('lock', held.revision)], [del('lock')]))
    // The release's answer came after its transaction: the lock is the waiter's already.
    const now = await b.get('lock')
    expect(now).toMatchObject({ owner: 'w' })
    expect(now!.created).toBeGreaterThan(release.revision)
    expect((await b.commit([absent('lock')], [set('lock', 'barger')])).ok).toBe(false)
    expect(await take).toMatchObject({ ok: true, revision: now!.created, deleted: ['q.w'], entries: [{ key: 'lock', owner: 'w', created: now!.created }] })
    // Told by its notification, not by the safety poll (every second).
    expect(performance.now() - t0).toBeLessThan(900)
    expect(await parkedRows(db, ns)).toBe(0)
  })

  test('a handed-over take writes its value, owner and TTL (counted from the grant); an add goes through the same way', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const gate = ok(await h.commit([absent('gate')], [set('gate', 'h')]))
    await h.commit([], [{ type: 'add', key: 'n', delta: 2 }])
    let parked = 0
    const take = w.commit([absent('lock')], [{ type: 'set', key: 'lock', value: { by: 'w' }, owner: 'w', ttl: 5_000 }], { ...park(), onParked: () => parked++ })
    const add = w.commit([absent('gate')], [{ type: 'add', key: 'n', delta: 5 }], { waitChange: 10_000, onParked: () => parked++ })
    await until(() => parked === 2)
    await new Promise((r) => setTimeout(r, 300))
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await take).toMatchObject({ ok: true, entries: [{ key: 'lock', value: { by: 'w' }, owner: 'w', ttl: 5_000 }] })
    const now = (await h.get('lock'))!
    expect(now).toMatchObject({ value: { by: 'w' }, owner: 'w' })
    expect(now.ttl).toBeGreaterThan(4_500)
    await h.commit([life('gate', gate.revision)], [del('gate')])
    expect(await add).toMatchObject({ ok: true, entries: [{ key: 'n', value: 7 }] })
  })

  test('a wait past its deadline in the store gets one last try from its adapter: taken where its checks hold then', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const ns = store.ns
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    let parked = false
    const t0 = performance.now()
    const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(600), onParked: () => (parked = true) })
    await until(() => parked)
    // Its deadline passed in the store (no change applies it now), the lock is free: its adapter's last try takes it.
    await db.admin.query("UPDATE zaris.parked SET deadline = clock_timestamp() - interval '1 second' WHERE ns = $1", [ns])
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await h.get('lock')).toBeUndefined()
    expect(await take).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w' }] })
    expect(performance.now() - t0).toBeGreaterThanOrEqual(590)
    expect(await parkedRows(db, ns)).toBe(0)
  })

  test('a wait whose signal is already aborted is answered at once with its failure and left in no line', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const stop = new AbortController()
    stop.abort()
    const t0 = performance.now()
    expect(await w.commit([absent('lock')], [set('lock', 'w')], { ...park(5_000), signal: stop.signal })).toMatchObject({ ok: false, failed: [{ key: 'lock' }] })
    expect(performance.now() - t0).toBeLessThan(2_000)
    expect(await parkedRows(db, store.ns)).toBe(0)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await h.get('lock')).toBeUndefined()
  })

  test('a handed-over write with fresh starts a new life of a key its owner already holds', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const mine = ok(await w.commit([absent('mine')], [set('mine', 'w')]))
    let parked = false
    const take = w.commit([absent('lock')], [set('lock', 'w'), { type: 'set', key: 'mine', value: null, owner: 'w', ttl: 60_000, fresh: true }], { ...park(), onParked: () => (parked = true) })
    await until(() => parked)
    await h.commit([life('lock', held.revision)], [del('lock')])
    const won = ok(await take)
    expect((await h.get('mine'))!.created).toBe(won.revision)
    expect(won.revision).toBeGreaterThan(mine.revision)
  })

  test("a caller's request id: a parked commit's answer is kept under it, so the commit sent again is answered, not tried again", async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    let parked = false
    const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), requestId: 'r-1', onParked: () => (parked = true) })
    await until(() => parked)
    await h.commit([life('lock', held.revision)], [del('lock')])
    const won = ok(await take)
    expect(await w.commit([absent('lock')], [set('lock', 'w')], { requestId: 'r-1' })).toMatchObject({ ok: true, revision: won.revision })
  })

  test('a waiting commit that goes through at once is not parked, and leaves nothing running', async () => {
    await using store = await adapters(db, 1)
    const counted = countedPool(db.server.url(), 4)
    const w = await postgresAdapter({ pool: counted.pool, namespace: store.ns, listen: false })
    try {
      let parked = false
      expect(await w.commit([absent('lock')], [set('lock', 'w')], { ...park(), onParked: () => (parked = true) })).toMatchObject({ ok: true })
      // And one that fails at once (a key its wakeOwner owns), whose answer is kept nowhere.
      expect(await w.commit([absent('lock')], [set('lock', 'x')], { ...park(), wakeOwner: 'w', onParked: () => (parked = true) })).toMatchObject({ ok: false })
      expect(parked).toBe(false)
      const after = counted.calls()
      await new Promise((r) => setTimeout(r, 100))
      expect(counted.calls()).toBe(after)
    } finally {
      await w.close()
      await counted.pool.end()
    }
  })

  test("an abort after the store's deadline passed does not give the commit a last try", async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const stop = new AbortController()
    let parked = false
    const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), signal: stop.signal, onParked: () => (parked = true) })
    await until(() => parked)
    await db.admin.query("UPDATE zaris.parked SET deadline = clock_timestamp() - interval '1 second' WHERE ns = $1", [store.ns])
    await h.commit([life('lock', held.revision)], [del('lock')])
    stop.abort()
    expect(await take).toMatchObject({ ok: false })
    expect(await h.get('lock')).toBeUndefined()
  })

  test('a watcher hears the release, then the waiter\'s put at a later revision', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const heard: string[] = []
    await h.watch('lock', { event: (e) => heard.push(`${e.type} ${e.owner ?? ''}`.trim()), error: () => {} })
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    let parked = false
    const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), onParked: () => (parked = true) })
    await until(() => parked)
    const release = ok(await h.commit([life('lock', held.revision)], [del('lock')]))
    expect(ok(await take).revision).toBeGreaterThan(release.revision)
    await until(() => heard.length === 3)
    expect(heard).toEqual(['put h', 'delete', 'put w'])
  })

  test('waiters get the lock in parkOrder, not in the order they parked', async () => {
    await using store = await adapters(db, 4)
    const [h, ...ws] = store.all as [PostgresAdapter, ...PostgresAdapter[]]
    await h.commit([absent('lock')], [set('lock', 'h')])
    const order = [3, 1, 2]
    const answered: string[] = []
    let parked = 0
    const takes = ws.map((w, i) =>
      w.commit([absent('lock')], [set('lock', `w${order[i]}`)], { ...park(10_000, order[i]), onParked: () => parked++ }).then((r) => (answered.push(`w${order[i]}`), r)),
    )
    await until(() => parked === 3)
    for (let i = 0; i < 3; i++) {
      const now = (await h.get('lock'))!
      await h.commit([life('lock', now.created)], [del('lock')])
      await until(() => answered.length === i + 1)
    }
    await Promise.all(takes)
    expect(answered).toEqual(['w1', 'w2', 'w3'])
  })

  test('a waiter that gave up its place is answered with that failure and never granted', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const ns = store.ns
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const { place, take } = await waitInLine(w)
    // The waiter's place is deleted (it gave up): its take is answered now (not at its wait's end), failed at its place.
    const t0 = performance.now()
    await h.commit([life('q.w', place)], [del('q.w')])
    const r = await take
    expect(performance.now() - t0).toBeLessThan(2_000)
    expect(r.ok).toBe(false)
    expect(r.ok ? [] : r.failed.map((f) => f.key)).toContain('q.w')
    // Read from the notification, with Postgres's clock: the holder's time left.
    const lock = r.ok ? undefined : r.failed.find((f) => f.key === 'lock')?.entry
    expect(lock?.ttl).toBeGreaterThan(50_000)
    expect(lock?.ttl).toBeLessThanOrEqual(60_000)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await h.get('lock')).toBeUndefined()
    expect(await parkedRows(db, ns)).toBe(0)
  })

  test('an answer too long for a notification (over 7 000 bytes) is read from the store at once', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const big = 'x'.repeat(8_000)
    await h.commit([absent('lock')], [{ type: 'set', key: 'lock', value: big, owner: 'h' }])
    const { place, take } = await waitInLine(w)
    const t0 = performance.now()
    await h.commit([life('q.w', place)], [del('q.w')])
    const r = await take
    expect(performance.now() - t0).toBeLessThan(900)
    expect(r).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { value: big } }, { key: 'q.w' }] })
  })

  test("a holder's TTL ends with nobody else writing: the parked waiter holds within the TTL and a few ms", async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    await h.commit([absent('lock')], [set('lock', 'h', 300)])
    const t0 = performance.now()
    const r = ok(await w.commit([absent('lock')], [set('lock', 'w')], park()))
    const waited = performance.now() - t0
    expect(r.entries[0]).toMatchObject({ owner: 'w' })
    expect(waited).toBeGreaterThan(250)
    expect(waited).toBeLessThan(1_000)
  })

  test('a holder that renews keeps the lock: the waiter is not answered, and is handed the lock at the new deadline', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h', 300)]))
    let answered = false
    const t0 = performance.now()
    const take = w.commit([absent('lock')], [set('lock', 'w')], park()).then((r) => ((answered = true), r))
    await new Promise((r) => setTimeout(r, 200))
    await h.commit([life('lock', held.revision)], [set('lock', 'h', 400)])
    await new Promise((r) => setTimeout(r, 250))
    expect(answered).toBe(false)
    expect(await h.get('lock')).toMatchObject({ owner: 'h' })
    expect(ok(await take).entries[0]).toMatchObject({ owner: 'w' })
    // At the renewed deadline (~600 ms), not at the wait's end.
    expect(performance.now() - t0).toBeLessThan(1_500)
  })

  test('a wait that runs out is answered with the failure and never applied after', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const ns = store.ns
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const t0 = performance.now()
    const r = await w.commit([absent('lock')], [set('lock', 'w')], park(300))
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290)
    expect(r).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
    expect(await parkedRows(db, ns)).toBe(0)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await h.get('lock')).toBeUndefined()
  })

  test('an aborted wait is taken out of park and never applied; a close does the same for every wait', async () => {
    await using store = await adapters(db, 3)
    const [h, w, c] = store.all as [PostgresAdapter, PostgresAdapter, PostgresAdapter]
    const ns = store.ns
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const stop = new AbortController()
    let parked = 0
    const aborted = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), signal: stop.signal, onParked: () => parked++ })
    const closed = c.commit([absent('lock')], [set('lock', 'c')], { ...park(), onParked: () => parked++ })
    await until(() => parked === 2)
    const t0 = performance.now()
    stop.abort()
    expect(await aborted).toMatchObject({ ok: false })
    expect(performance.now() - t0).toBeLessThan(2_000)
    await c.close()
    expect(await closed).toMatchObject({ ok: false })
    expect(await parkedRows(db, ns)).toBe(0)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await h.get('lock')).toBeUndefined()
  })

  test("a permit's other ways: the first free slot goes to the first in line, in the release's transaction", async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const a = ok(await h.commit([absent('s1')], [set('s1', 'h')]))
    await h.commit([absent('s2')], [set('s2', 'h')])
    let parked = false
    const take = w.commit([absent('s1')], [set('s1', 'w')], {
      ...park(),
      orElse: [{ checks: [absent('s2')], ops: [set('s2', 'w')] }],
      onParked: () => (parked = true),
    })
    await until(() => parked)
    await h.commit([life('s2', (await h.get('s2'))!.created)], [del('s2')])
    // It went through its other way: the answer names s2.
    expect(await take).toMatchObject({ ok: true, entries: [{ key: 's2', owner: 'w' }] })
    expect(await h.get('s1')).toMatchObject({ owner: 'h', created: a.revision })
  })

  test('other ways count only with keepParked: a plain waitChange goes by its own checks', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    await h.commit([absent('s1')], [set('s1', 'h')])
    const r = await w.commit([absent('s1')], [set('s1', 'w')], { waitChange: 200, orElse: [{ checks: [absent('s2')], ops: [set('s2', 'w')] }] })
    expect(r).toMatchObject({ ok: false, failed: [{ key: 's1' }] })
    expect(await h.get('s2')).toBeUndefined()
  })

  test('a shared waiter (wakeOwner) is answered when its owner started the group at a key it checks', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const held = ok(await h.commit([absent('g')], [set('g', 'h')]))
    let parked = false
    const take = w.commit([absent('g')], [set('g', 'w')], { ...park(), wakeOwner: 'group', onParked: () => (parked = true) })
    await until(() => parked)
    // The key passes to the group's owner: the waiter comes back to join it, at once (not at its wait's end).
    const t0 = performance.now()
    await h.commit([life('g', held.revision)], [set('g', 'group')])
    expect(await take).toMatchObject({ ok: false, failed: [{ key: 'g', entry: { owner: 'group' } }] })
    expect(performance.now() - t0).toBeLessThan(2_000)
    // And a first try that fails so does not park.
    expect(await w.commit([absent('g')], [set('g', 'w')], { ...park(), wakeOwner: 'group' })).toMatchObject({ ok: false })
  })

  test('a plain waitChange (no keepParked) is answered at the first change that turns one of its checks, not at one that does not', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    let answered = false
    const take = w.commit([absent('lock')], [set('lock', 'w')], { waitChange: 5_000 }).then((r) => ((answered = true), r))
    await new Promise((r) => setTimeout(r, 100))
    await h.commit([life('lock', held.revision)], [set('lock', 'h')])
    await new Promise((r) => setTimeout(r, 150))
    expect(answered).toBe(false)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await take).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w' }] })
  })

  test.each(['a commit', 'a read'])("an expiry that %s finds hands the key to the line first", async (by) => {
    await using store = await adapters(db, 2)
    const [h, b] = store.all as [PostgresAdapter, PostgresAdapter]
    const ns = store.ns
    await h.commit([absent('lock')], [set('lock', 'h', 200)])
    // Parked by hand, as an adapter whose expiry timer has not fired yet.
    const r = await db.admin.query('SELECT zaris.park($1, NULL, 7, $2, 10000, true, NULL, NULL, 60000, 10000) AS a', [ns, LOCK_WAY])
    expect(r.rows[0].a[0]).toBe(5)
    await new Promise((r) => setTimeout(r, 300))
    if (by === 'a commit') expect((await b.commit([absent('lock')], [set('lock', 'barger')])).ok).toBe(false)
    expect(await b.get('lock')).toMatchObject({ owner: 'hand' })
    expect(await parkedRows(db, ns)).toBe(0)
  })

  test("a waiting commit whose first try would end a life a fence holds waits for the fence's transaction, then applies", async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const tx = new pg.Client({ connectionString: db.server.url() })
    await tx.connect()
    try {
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      await tx.query('BEGIN')
      await fence(tx, { key: 'lock', token: held.revision })
      let done = false
      const t0 = performance.now()
      const take = w.commit([life('lock', held.revision)], [del('lock')], park(5_000)).then((r) => ((done = true), r))
      await new Promise((r) => setTimeout(r, 200))
      expect(done).toBe(false)
      await tx.query('COMMIT')
      expect(await take).toMatchObject({ ok: true, deleted: ['lock'] })
      expect(performance.now() - t0).toBeGreaterThanOrEqual(190)
    } finally {
      await tx.end()
    }
  })

  test('a parked commit whose adapter is gone is never applied past its deadline, and pruning drops its row', async () => {
    await using store = await adapters(db, 1)
    const [h] = store.all as [PostgresAdapter]
    const ns = store.ns
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    // A park by hand, as an adapter that then died would leave it.
    const r = await db.admin.query('SELECT zaris.park($1, NULL, 42, $2, 100, true, NULL, NULL, 1, 10000) AS a', [ns, LOCK_WAY])
    expect(r.rows[0].a[0]).toBe(5)
    expect(await parkedRows(db, ns)).toBe(1)
    await new Promise((r) => setTimeout(r, 150))
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await h.get('lock')).toBeUndefined()
    // Its row stays until a pruning finds it older than the retention (1 ms here).
    await db.admin.query('SELECT zaris.prune($1, 10000, 1, clock_timestamp()) FROM zaris.lock_store($1)', [ns])
    expect(await parkedRows(db, ns)).toBe(0)
  })
})

describe("a waiter's ear: NOTIFY while it waits, a poll where NOTIFY does not arrive, nothing once answered", () => {
  test('no LISTEN connection is kept for an adapter that waits no more (after the listener lingers 2 s)', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const listening = async () => (await db.admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'zaris listen'")).rows[0].n as number
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    let parked = false
    const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), onParked: () => (parked = true) })
    await until(() => parked)
    await until(async () => (await listening()) === 1)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect((await take).ok).toBe(true)
    await new Promise((r) => setTimeout(r, 2_600))
    expect(await listening()).toBe(0)
  })

  test('an answer that a notification carries costs the waiter no query', async () => {
    await using store = await adapters(db, 1)
    const [h] = store.all as [PostgresAdapter]
    const counted = countedPool(db.server.url(), 4)
    const w = await postgresAdapter({ pool: counted.pool, namespace: store.ns, listen: db.server.url() })
    try {
      // The second of two waits: the first opened the LISTEN connection and proved it works.
      for (const round of [1, 2]) {
        const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
        let parked = false
        const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), onParked: () => (parked = true) })
        await until(() => parked)
        if (round === 1) await new Promise((r) => setTimeout(r, 1_200))
        const before = counted.calls()
        await h.commit([life('lock', held.revision)], [del('lock')])
        const won = ok(await take)
        if (round === 2) expect(counted.calls()).toBe(before)
        await w.commit([life('lock', won.revision)], [del('lock')])
      }
    } finally {
      await w.close()
      await counted.pool.end()
    }
  })

  test('with listen: false the answer is read by a poll every few ms, and the reads stop with the wait', async () => {
    await using store = await adapters(db, 1)
    const [h] = store.all as [PostgresAdapter]
    const counted = countedPool(db.server.url(), 4)
    const w = await postgresAdapter({ pool: counted.pool, namespace: store.ns, listen: false })
    try {
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      let parked = false
      const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), onParked: () => (parked = true) })
      await until(() => parked)
      const before = counted.calls()
      await new Promise((r) => setTimeout(r, 200))
      const polls = counted.calls() - before
      expect(polls).toBeGreaterThan(5)
      const t0 = performance.now()
      await h.commit([life('lock', held.revision)], [del('lock')])
      expect((await take).ok).toBe(true)
      expect(performance.now() - t0).toBeLessThan(200)
      // No read, and no timer either (a poll loop that reads nothing still costs a wake-up every 5 ms).
      const timers = vi.spyOn(systemClock, 'setTimeout')
      const after = counted.calls()
      await new Promise((r) => setTimeout(r, 200))
      expect(counted.calls()).toBe(after)
      expect(timers).not.toHaveBeenCalled()
      timers.mockRestore()
    } finally {
      await w.close()
      await counted.pool.end()
    }
  })
})

describe('the Postgres store hands over behind PgBouncer (no notifications: answers are polled)', () => {
  let bouncer: PgBouncer
  beforeAll(async () => {
    bouncer = await new PgBouncer(db.server).start()
  })
  afterAll(async () => {
    await bouncer?.dispose()
  })

  test('a release hands the lock over and the waiter reads its answer within a few polls', async () => {
    await using store = await adapters(db, 2, (ns) => bouncer.url(ns))
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    expect(h.listening).toBe(false)
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    let parked = false
    const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), onParked: () => (parked = true) })
    await until(() => parked)
    const t0 = performance.now()
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(ok(await take).entries[0]).toMatchObject({ owner: 'w' })
    expect(performance.now() - t0).toBeLessThan(500)
  })
})
