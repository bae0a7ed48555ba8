/**
 * A parked commit as the Postgres adapter sends and waits for it (parked.ts
 * `wayJson`, `runParked`, `ParkAnswers`, the expiry timer), against a real
 * Postgres: every field of a way is judged and applied at the grant as the
 * commit would be at once (strays of other op types not sent), a bad other
 * way is refused before anything is sent, a park Postgres cancels or does
 * not answer in time is sent again with growing pauses, then fails naming
 * the commit; a grant wakes the waiter's watches, survives an abort whose
 * notification is held up (the listener's backend SIGSTOPped), and is heard
 * by each of an adapter's waits; a wait behind slots of different TTLs is
 * handed the first to end, and looks at deadlines once each (counted).
 */
import { getEventListeners } from 'node:events'
import { describe, expect, test } from 'vitest'
import type { CommitResult, Op, WatchEvent } from 'zaris'
import pg from 'pg'
import { fence, postgresAdapter, type PostgresAdapter } from 'zaris/postgres'
import { until } from '../conformance/util'
import { absent, adapters, del, life, ok, park, parkedRows, set } from './handover-kit'
import { countedPool, queryCountingPool, usePostgres } from './use-postgres'

const db = usePostgres('w')

/** A commit of `w`, once parked (its onParked seen). */
async function parked(w: PostgresAdapter, ...[checks, ops, options]: Parameters<PostgresAdapter['commit']>): Promise<{ take: Promise<CommitResult> }> {
  let seen = false
  const take = w.commit(checks, ops, { ...options, onParked: () => (seen = true) })
  await until(() => seen)
  return { take }
}

describe("a parked commit's ways at the grant", () => {
  test('a check by life is judged by created, not by revision: a group whose count moved on is still the same life', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const group = ok(await h.commit([absent('g')], [{ type: 'set', key: 'g', value: 1, owner: 'group' }]))
    await h.commit([life('g', group.revision)], [{ type: 'add', key: 'g', delta: 1 }])
    // Its revision is past its created now: judged by revision, the check would fail.
    expect((await h.get('g'))!.revision).toBeGreaterThan(group.revision)
    const { take } = await parked(w, [absent('lock'), life('g', group.revision)], [set('lock', 'w')], park())
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await take).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w' }] })
  })

  test("fields an op of another type does not have (a JavaScript caller's strays) are not sent: the grant goes through", async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    await h.commit([], [set('gone', 'h')])
    const stray = [
      { type: 'set', key: 'lock', value: null, owner: 'w', ttl: 60_000, delta: 'x' },
      { type: 'delete', key: 'gone', ttl: 'x', owner: 5, fresh: 'x' },
      { type: 'add', key: 'n', delta: 2, ttl: 'x', owner: 5, fresh: 'x' },
    ] as unknown as Op[]
    const { take } = await parked(w, [absent('lock')], stray, park())
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await take).toMatchObject({ ok: true })
    expect(await h.get('lock')).toMatchObject({ owner: 'w' })
    expect(await h.get('gone')).toBeUndefined()
    expect(await h.get('n')).toMatchObject({ value: 2 })
  })

  test('a handed-over set over an entry its owner holds keeps its life (fresh only when asked)', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const mine = ok(await w.commit([absent('mine')], [set('mine', 'w')]))
    const { take } = await parked(w, [absent('lock')], [set('lock', 'w'), { type: 'set', key: 'mine', value: 2, owner: 'w', ttl: 60_000 }], park())
    await h.commit([life('lock', held.revision)], [del('lock')])
    const won = ok(await take)
    expect(won.revision).toBeGreaterThan(mine.revision)
    expect(await h.get('mine')).toMatchObject({ value: 2, created: mine.revision })
    expect(await h.get('lock')).toMatchObject({ owner: 'w', created: won.revision })
  })
})

describe('what a waiting commit is refused, and what it survives', () => {
  test('an add past the safe integers in a waiting commit that goes through at once is refused, naming the key; nothing parks', async () => {
    await using store = await adapters(db, 1)
    const [w] = store.all as [PostgresAdapter]
    await w.commit([], [{ type: 'set', key: 'n', value: Number.MAX_SAFE_INTEGER }])
    const err = await w.commit([], [{ type: 'add', key: 'n', delta: 1 }], park(5_000)).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect((err as Error).message).toContain('n')
    expect(await w.get('n')).toMatchObject({ value: Number.MAX_SAFE_INTEGER })
    expect(await parkedRows(db, store.ns)).toBe(0)
  })

  test('an other way (orElse) is checked as a commit is: a bad key or value is refused before anything is sent', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    await h.commit([absent('s1')], [set('s1', 'h')])
    const badKey = await w.commit([absent('s1')], [set('s1', 'w')], { ...park(2_000), orElse: [{ checks: [absent('s2')], ops: [set('', 'w')] }] }).catch((e: unknown) => e)
    expect(badKey).toMatchObject({ code: 'INVALID_ARGUMENT' })
    const badValue = await w
      .commit([absent('s1')], [set('s1', 'w')], { ...park(2_000), orElse: [{ checks: [absent('s2')], ops: [{ type: 'set', key: 's2', value: Number.NaN }] }] })
      .catch((e: unknown) => e)
    expect(badValue).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect((badValue as Error).message).toContain('ops[0].value')
    expect(await h.get('s2')).toBeUndefined()
    expect(await parkedRows(db, store.ns)).toBe(0)
  })

  test('a park that Postgres cancels (57014) is sent again, and goes through once the namespace is free', async () => {
    await using store = await adapters(db, 1)
    const [w] = store.all as [PostgresAdapter]
    await w.commit([absent('warm')], [set('warm', 'w')])
    const admin = db.admin
    await admin.query('BEGIN')
    let cancelled = false
    try {
      // The namespace's row is the first thing a commit locks: the park waits behind this transaction.
      await admin.query('SELECT 1 FROM zaris.stores WHERE ns = $1 FOR UPDATE', [store.ns])
      const take = w.commit([absent('lock')], [set('lock', 'w')], park(5_000))
      await until(async () => {
        const r = await admin.query("SELECT pg_cancel_backend(pid) AS c FROM pg_stat_activity WHERE application_name = 'a0' AND wait_event_type = 'Lock' AND datname = current_database()")
        cancelled ||= r.rows.some((row: { c: boolean }) => row.c)
        return cancelled
      })
      await new Promise((r) => setTimeout(r, 100))
      await admin.query('COMMIT')
      expect(await take).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w' }] })
    } finally {
      if (!cancelled) await admin.query('ROLLBACK')
    }
    expect(cancelled).toBe(true)
  })
})

describe("what a grant tells the waiter's process", () => {
  test("a granted take wakes its own adapter's watches at once, though they poll every 5 s with no notifications", async () => {
    await using store = await adapters(db, 1)
    const [h] = store.all as [PostgresAdapter]
    const w = await postgresAdapter({ url: db.server.url(store.ns), listen: false, pollInterval: 5_000 })
    try {
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      const seen: WatchEvent[] = []
      await w.watch('lock', { event: (e) => seen.push(e), error() {} }, held.revision)
      const { take } = await parked(w, [absent('lock')], [set('lock', 'w')], park())
      await h.commit([life('lock', held.revision)], [del('lock')])
      const won = ok(await take)
      // The grant's put, read by the watch now: not at its next poll, seconds away.
      await until(() => seen.some((e) => e.type === 'put' && e.revision === won.revision), 1_500)
    } finally {
      await w.close()
    }
  })
})

describe('a wait that ends as it is granted', () => {
  test('an abort whose notification is held up (listener backend SIGSTOPped) still returns the grant the store kept', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const stop = new AbortController()
    const { take } = await parked(w, [absent('lock')], [set('lock', 'w')], { ...park(), signal: stop.signal })
    const r = await db.admin.query("SELECT pid FROM pg_stat_activity WHERE application_name = 'zaris listen' AND datname = current_database()")
    const pids = r.rows.map((row: { pid: number }) => row.pid)
    expect(pids.length).toBeGreaterThan(0)
    for (const pid of pids) process.kill(pid, 'SIGSTOP')
    try {
      await h.commit([life('lock', held.revision)], [del('lock')])
      // Granted in the release's transaction; its notification cannot reach the waiter: the abort ends the wait first.
      stop.abort()
      const won = ok(await take)
      expect(won.entries[0]).toMatchObject({ key: 'lock', owner: 'w' })
      expect(await h.get('lock')).toMatchObject({ owner: 'w', created: won.revision })
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGCONT')
    }
  })
})

describe('waits of one adapter', () => {
  test('two waits of one adapter: the first answered, the second still hears its own grant at once (not at its deadline)', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    const one = ok(await h.commit([absent('one')], [set('one', 'h')]))
    const two = ok(await h.commit([absent('two')], [set('two', 'h')]))
    const first = await parked(w, [absent('one')], [set('one', 'w')], park())
    const second = await parked(w, [absent('two')], [set('two', 'w')], park())
    await h.commit([life('one', one.revision)], [del('one')])
    expect(await first.take).toMatchObject({ ok: true })
    const t0 = performance.now()
    await h.commit([life('two', two.revision)], [del('two')])
    expect(await second.take).toMatchObject({ ok: true })
    expect(performance.now() - t0).toBeLessThan(3_000)
  })

  test('a park Postgres does not answer in time fails UNAVAILABLE, saying the commit may or may not have been applied', async () => {
    const n = db.ns()
    const w = await postgresAdapter({ url: db.server.url(n), callTimeout: 200, timeout: 300 })
    await w.commit([absent('warm')], [set('warm', 'w')])
    const admin = db.admin
    await admin.query('BEGIN')
    try {
      await admin.query('SELECT 1 FROM zaris.stores WHERE ns = $1 FOR UPDATE', [n])
      const t0 = performance.now()
      const err = await w.commit([absent('lock')], [set('lock', 'w')], park(5_000)).catch((e: unknown) => e)
      // callTimeout, a pause of 25 ms, callTimeout again: past the 300 ms it may keep trying, so it says so.
      expect(performance.now() - t0).toBeLessThan(1_200)
      expect(err).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('commit did not answer within 200 ms (it may or may not have been applied)') })
    } finally {
      await admin.query('ROLLBACK')
      await w.close()
    }
  })
})

describe('a wait behind entries with TTLs', () => {
  test('behind two slots of different TTLs, the wait is handed the first to end, not the last', async () => {
    await using store = await adapters(db, 2)
    const [h, w] = store.all as [PostgresAdapter, PostgresAdapter]
    await h.commit([absent('s1')], [set('s1', 'h', 300)])
    await h.commit([absent('s2')], [set('s2', 'h', 4_000)])
    const t0 = performance.now()
    const r = await w.commit([absent('s2')], [set('s2', 'w')], { ...park(), orElse: [{ checks: [absent('s1')], ops: [set('s1', 'w')] }] })
    expect(r).toMatchObject({ ok: true, entries: [{ key: 's1', owner: 'w' }] })
    expect(performance.now() - t0).toBeLessThan(2_500)
  })

  test('a wait handed the lock by an expiry leaves no timer behind: no call once it is answered', async () => {
    await using store = await adapters(db, 1)
    const [h] = store.all as [PostgresAdapter]
    const counted = countedPool(db.server.url(), 4)
    const w = await postgresAdapter({ pool: counted.pool, namespace: store.ns, listen: db.server.url() })
    try {
      await h.commit([absent('lock')], [set('lock', 'h', 300)])
      // Its own hold is short too: a timer left running would look at the key again when it ends.
      const won = ok(await w.commit([absent('lock')], [set('lock', 'w', 300)], park()))
      expect(won.entries[0]).toMatchObject({ owner: 'w' })
      const after = counted.calls()
      await new Promise((r) => setTimeout(r, 700))
      expect(counted.calls()).toBe(after)
    } finally {
      await w.close()
      await counted.pool.end()
    }
  })

  test('behind a holder that renews, the wait looks at the deadline once per deadline, not every 100 ms', async () => {
    await using store = await adapters(db, 1)
    const [h] = store.all as [PostgresAdapter]
    const counted = countedPool(db.server.url(), 4)
    const w = await postgresAdapter({ pool: counted.pool, namespace: store.ns, listen: db.server.url() })
    try {
      // A first wait opens the LISTEN connection and proves it (its answers then cost no poll but a safety one a second).
      const warm = ok(await h.commit([absent('warm')], [set('warm', 'h')]))
      const { take: first } = await parked(w, [absent('warm')], [set('warm', 'w')], park())
      await new Promise((r) => setTimeout(r, 1_200))
      await h.commit([life('warm', warm.revision)], [del('warm')])
      expect(await first).toMatchObject({ ok: true })
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h', 300)]))
      const before = counted.calls()
      const t0 = performance.now()
      const take = w.commit([absent('lock')], [set('lock', 'w')], park())
      await new Promise((r) => setTimeout(r, 150))
      await h.commit([life('lock', held.revision)], [set('lock', 'h', 1_200)])
      expect(await take).toMatchObject({ ok: true })
      expect(performance.now() - t0).toBeGreaterThan(1_200)
      // The park, a look at the first deadline, one at the renewed one, a safety read or two: not one every 100 ms.
      expect(counted.calls() - before).toBeLessThanOrEqual(6)
    } finally {
      await w.close()
      await counted.pool.end()
    }
  })
})

describe("a wait's looks at deadlines and its bounds, counted", () => {
  /** Adapter `w` on a pool counting its `due_in` calls (the expiry timer's looks), beside holder `h`. */
  async function counting(part = 'due_in', options: Record<string, unknown> = {}) {
    const store = await adapters(db, 1)
    const counted = queryCountingPool(db.server.url(), part, 4)
    const w = await postgresAdapter({ pool: counted.pool, namespace: store.ns, listen: db.server.url(), ...options })
    return {
      h: store.all[0]!,
      w,
      ns: store.ns,
      calls: counted.calls,
      [Symbol.asyncDispose]: async () => {
        await w.close()
        await counted.pool.end()
        await store[Symbol.asyncDispose]()
      },
    }
  }

  test('behind a holder with no TTL the wait never looks at a deadline; behind one with a TTL it looks once, when it ends', async () => {
    await using t = await counting()
    const held = ok(await t.h.commit([absent('lock')], [{ type: 'set', key: 'lock', value: null, owner: 'h' }]))
    const { take } = await parked(t.w, [absent('lock')], [set('lock', 'w')], park())
    await new Promise((r) => setTimeout(r, 300))
    expect(t.calls()).toBe(0)
    await t.h.commit([life('lock', held.revision)], [del('lock')])
    expect(await take).toMatchObject({ ok: true })
    await t.h.commit([absent('ttl')], [set('ttl', 'h', 400)])
    const t0 = performance.now()
    expect(await t.w.commit([absent('ttl')], [set('ttl', 'w')], park())).toMatchObject({ ok: true })
    expect(performance.now() - t0).toBeGreaterThanOrEqual(390)
    expect(t.calls()).toBe(1)
  })

  test('once the entry with a TTL in its way has ended, a wait still held by one with none looks no more', async () => {
    await using t = await counting()
    await t.h.commit([absent('a')], [set('a', 'h', 300)])
    const b = ok(await t.h.commit([absent('b')], [{ type: 'set', key: 'b', value: null, owner: 'h' }]))
    const { take } = await parked(t.w, [absent('a'), absent('b')], [set('a', 'w'), set('b', 'w')], park())
    await new Promise((r) => setTimeout(r, 900))
    expect(await t.h.get('a')).toBeUndefined()
    expect(t.calls()).toBe(1)
    await t.h.commit([life('b', b.revision)], [del('b')])
    expect(await take).toMatchObject({ ok: true })
  })

  test("a park's row lasts as long as its wait, and an answered wait leaves no listener on its caller's signal", async () => {
    await using t = await counting()
    const held = ok(await t.h.commit([absent('lock')], [set('lock', 'h')]))
    const stop = new AbortController()
    const { take } = await parked(t.w, [absent('lock')], [set('lock', 'w')], { ...park(2_000), signal: stop.signal })
    const r = await db.admin.query('SELECT extract(epoch FROM deadline - clock_timestamp()) * 1000 AS ms FROM zaris.parked WHERE ns = $1', [t.ns])
    expect(Number(r.rows[0].ms)).toBeLessThan(2_100)
    await t.h.commit([life('lock', held.revision)], [del('lock')])
    expect(await take).toMatchObject({ ok: true })
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0)
  })

  test('while Postgres cannot answer, a park is sent again with growing pauses, not in a tight loop', async () => {
    await using t = await counting('.park(', { callTimeout: 50, timeout: 5_000 })
    await t.w.commit([absent('warm')], [set('warm', 'w')])
    await db.admin.query('BEGIN')
    try {
      await db.admin.query('SELECT 1 FROM zaris.stores WHERE ns = $1 FOR UPDATE', [t.ns])
      const take = t.w.commit([absent('lock')], [set('lock', 'w')], park(5_000))
      await new Promise((r) => setTimeout(r, 2_000))
      // 50 ms a call, then 25, 50, 100 … ms between: about seven in 2 s (pauses that shrink would make ~35).
      expect(t.calls()).toBeLessThanOrEqual(12)
      await db.admin.query('COMMIT')
      expect(await take).toMatchObject({ ok: true })
    } catch (err) {
      await db.admin.query('ROLLBACK')
      throw err
    }
  })

  test('a holder past its deadline that a fence keeps is looked at every 100 ms or so, not in a tight loop; the wait holds once the fence ends', async () => {
    await using t = await counting()
    const held = ok(await t.h.commit([absent('lock')], [set('lock', 'h', 200)]))
    const tx = new pg.Client({ connectionString: db.server.url() })
    await tx.connect()
    try {
      await tx.query('BEGIN')
      await fence(tx, { key: 'lock', token: held.revision })
      const { take } = await parked(t.w, [absent('lock')], [set('lock', 'w')], park())
      await new Promise((r) => setTimeout(r, 800))
      // Past due at ~200 ms, kept by the fence: a look every 100 ms since (a tight loop would make hundreds).
      expect(t.calls()).toBeGreaterThanOrEqual(2)
      expect(t.calls()).toBeLessThanOrEqual(12)
      await tx.query('COMMIT')
      expect(await take).toMatchObject({ ok: true })
    } finally {
      await tx.end()
    }
  })

  test('a look at a deadline that fails (its function gone a while) is made again 100 ms later: the wait holds soon after', async () => {
    await using t = await counting()
    await t.h.commit([absent('lock')], [set('lock', 'h', 300)])
    await db.admin.query('ALTER FUNCTION zaris.due_in(text, bytea[]) RENAME TO due_in_away')
    let back = false
    try {
      const t0 = performance.now()
      const take = t.w.commit([absent('lock')], [set('lock', 'w')], park())
      await new Promise((r) => setTimeout(r, 600))
      await db.admin.query('ALTER FUNCTION zaris.due_in_away(text, bytea[]) RENAME TO due_in')
      back = true
      expect(await take).toMatchObject({ ok: true })
      // Not at the wait's 10 s end: a look made again after the failures found the deadline past.
      expect(performance.now() - t0).toBeLessThan(3_000)
    } finally {
      if (!back) await db.admin.query('ALTER FUNCTION zaris.due_in_away(text, bytea[]) RENAME TO due_in')
    }
  })
})

