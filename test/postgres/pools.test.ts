/**
 * Which pool a Postgres adapter runs on (src/adapters/postgres/connection.ts),
 * seen from Postgres's own `pg_stat_activity`: adapters opened from one URL
 * with equal options share one pool, whatever their namespaces; other
 * options, or options that cannot be compared (functions), get a pool of
 * their own; a pool is ended with its last adapter and a later adapter gets
 * a new one; the caller's own pool is used as it is — shared by the
 * adapters made on it, left open, its listeners untouched. On a real
 * Postgres.
 */
import pg from 'pg'
import { expect, test } from 'vitest'
import { postgresAdapter, schemaSql, type PostgresAdapter } from 'zaris/postgres'
import { FaultProxy } from '../faults/proxy'
import { sleep, until } from '../conformance/util'
import { countedPool, usePostgres } from './use-postgres'

const db = usePostgres('pools')
const ns = db.ns

/** The backends of this test's database opened by adapter pools made from a URL (application_name `zaris`) or by `name`. */
async function backends(name = 'zaris'): Promise<number> {
  const r = await db.admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, [name])
  return r.rows[0]!.n
}

/** One read by each adapter at once: each pool opens a connection (kept idle for 10 s after). */
async function readAtOnce(adapters: PostgresAdapter[]): Promise<void> {
  await Promise.all(adapters.map((a) => a.get('k')))
}

/** Errors thrown outside any call while `fn` runs (an 'error' event nobody hears), which would crash a process. */
async function uncaught(fn: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = []
  const hear = (err: unknown) => seen.push(err)
  process.on('uncaughtException', hear)
  try {
    await fn()
  } finally {
    process.off('uncaughtException', hear)
  }
  return seen
}

/** A transaction of its own that holds `name`'s namespace row: that namespace's commits wait until `release()`. */
async function holdNamespace(name: string): Promise<{ release(): Promise<void>; end(): Promise<void> }> {
  const blocker = new pg.Client({ connectionString: db.server.url() })
  await blocker.connect()
  await blocker.query('BEGIN')
  await blocker.query('SELECT 1 FROM zaris.stores WHERE ns = $1 FOR UPDATE', [name])
  return {
    release: async () => void (await blocker.query('COMMIT')),
    end: () => blocker.end(),
  }
}

async function closeAll(adapters: PostgresAdapter[]): Promise<void> {
  for (const a of adapters) await a.close()
}

test('one URL with equal options: one pool for every namespace; other options or uncomparable ones: a pool each', async () => {
  const shared = await Promise.all([postgresAdapter({ url: db.server.url(ns()), pg: { max: 1 } }), postgresAdapter({ url: db.server.url(ns()), pg: { max: 1 } })])
  try {
    await readAtOnce(shared)
    // max 1, shared: a single backend serves both namespaces.
    expect(await backends()).toBe(1)
    const other = await postgresAdapter({ url: db.server.url(ns()), pg: { max: 1, idleTimeoutMillis: 9_000 } })
    const own = await Promise.all([
      postgresAdapter({ url: db.server.url(ns()), pg: { max: 1, types: { getTypeParser: pg.types.getTypeParser } } }),
      postgresAdapter({ url: db.server.url(ns()), pg: { max: 1, types: { getTypeParser: pg.types.getTypeParser } } }),
    ])
    try {
      await readAtOnce([...shared, other, ...own])
      expect(await backends()).toBe(4)
    } finally {
      await closeAll([other, ...own])
    }
  } finally {
    await closeAll(shared)
  }
})

test('a pool ends with its last adapter, not before; an adapter opened after that gets a new one', async () => {
  const url = db.server.url(ns())
  const [a, b] = await Promise.all([postgresAdapter({ url, pg: { max: 1 } }), postgresAdapter({ url, pg: { max: 1 } })])
  await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
  await a.close()
  expect((await b.get('k'))?.value).toBe(1)
  await b.close()
  await until(async () => (await backends()) === 0, 5_000)
  const c = await postgresAdapter({ url, pg: { max: 1 } })
  try {
    expect((await c.get('k'))?.value).toBe(1)
  } finally {
    await c.close()
  }
})

test("the caller's pool: one for every adapter made on it, open after they close, its listeners untouched", async () => {
  const pool = new pg.Pool({ connectionString: db.server.url(), max: 2, application_name: 'mine' })
  const errors = pool.listenerCount('error')
  const connects = pool.listenerCount('connect')
  const [a, b] = await Promise.all([postgresAdapter({ pool, namespace: ns() }), postgresAdapter({ pool, namespace: ns() })])
  try {
    const seen: string[] = []
    await a.watch('w/', { event: (e) => seen.push(e.key), error() {} })
    await b.watch('w/', { event: (e) => seen.push(e.key), error() {} })
    await until(() => a.listening && b.listening, 5_000)
    // One LISTEN connection for both: they are one connection of zaris's.
    expect(await backends('zaris listen')).toBe(1)
    expect(pool.listenerCount('error')).toBe(errors)
    expect(pool.listenerCount('connect')).toBe(connects)
    await a.close()
    await b.commit([], [{ type: 'set', key: 'w/1', value: 1 }])
    await until(() => seen.includes('w/1'), 5_000)
  } finally {
    await a.close()
    await b.close()
  }
  // Both closed: a third adapter on the same pool works, and the pool is still the caller's.
  const c = await postgresAdapter({ pool, namespace: ns() })
  try {
    expect((await c.commit([], [{ type: 'set', key: 'k', value: 2 }])).ok).toBe(true)
  } finally {
    await c.close()
  }
  expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1)
  await pool.end()
})

test('a failed setup of the tables is not kept: the next adapter on the same pool tries again', async () => {
  const pool = new pg.Pool({ connectionString: db.server.url(), max: 2 })
  // Another adapter keeps zaris's use of the pool alive throughout.
  const keeper = await postgresAdapter({ pool, namespace: ns() })
  try {
    await expect(postgresAdapter({ pool, namespace: ns(), schema: 'later', createSchema: false })).rejects.toMatchObject({ code: 'UNAVAILABLE' })
    await db.admin.query(schemaSql('later'))
    const a = await postgresAdapter({ pool, namespace: ns(), schema: 'later', createSchema: false })
    expect((await a.commit([], [{ type: 'set', key: 'k', value: 1 }])).ok).toBe(true)
    await a.close()
  } finally {
    await keeper.close()
    await pool.end()
  }
})

test("a pooled client's error listeners do not pile up across checkouts", async () => {
  const pool = new pg.Pool({ connectionString: db.server.url(), max: 1 })
  const clients: pg.PoolClient[] = []
  pool.on('connect', (c) => clients.push(c))
  const a = await postgresAdapter({ pool, namespace: ns() })
  try {
    for (let i = 0; i < 30; i++) await a.commit([], [{ type: 'set', key: 'k', value: i }])
    expect(clients).toHaveLength(1)
    // The pool's own ear while idle, and zaris's one, added once.
    expect(clients[0]!.listenerCount('error')).toBeLessThanOrEqual(2)
  } finally {
    await a.close()
    await pool.end()
  }
})

test('options JSON cannot compare (a symbol, a BigInt, a circular object) get a pool each; no options and empty ones share one', async () => {
  const circular: Record<string, unknown> = {}
  circular.self = circular
  const open = (options?: Record<string, unknown>) => postgresAdapter({ url: db.server.url(ns()), ...(options ? { pg: options } : {}) })
  const own = [await open({ tag: Symbol('a') }), await open({ tag: Symbol('a') }), await open({ tag: 1n }), await open({ tag: 1n }), await open({ tag: circular }), await open({ tag: circular })]
  try {
    // Opened one after another: a shared pool would have served them all on one idle connection. (Counted
    // till it settles: an earlier test's ended backend may linger in pg_stat_activity for a moment.)
    await until(async () => (await backends()) === 6, 3_000).catch(() => {})
    expect(await backends()).toBe(6)
  } finally {
    await closeAll(own)
  }
  const shared = [await open(), await open({})]
  try {
    await until(async () => (await backends()) === 1, 3_000).catch(() => {})
    expect(await backends()).toBe(1)
  } finally {
    await closeAll(shared)
  }
})

test('the tables are checked once per pool and schema: a second adapter on them only reads its revision', async () => {
  const counted = countedPool(db.server.url())
  try {
    const a = await postgresAdapter({ pool: counted.pool, namespace: ns(), schema: 'checked_once' })
    const first = counted.calls()
    const b = await postgresAdapter({ pool: counted.pool, namespace: ns(), schema: 'checked_once' })
    expect(first).toBeGreaterThan(1)
    expect(counted.calls() - first).toBe(1)
    await closeAll([a, b])
  } finally {
    await counted.pool.end()
  }
})

test('an idle connection of the pool that Postgres ends does not crash the process; the next call opens another', async () => {
  const a = await postgresAdapter({ url: db.server.url(ns()), pg: { max: 1 } })
  try {
    expect(await backends()).toBe(1)
    const errors = await uncaught(async () => {
      await db.admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'zaris'`)
      await until(async () => (await backends()) === 0, 5_000)
      await sleep(200)
    })
    expect(errors).toEqual([])
    expect(await a.get('k')).toBeUndefined()
    expect(await backends()).toBe(1)
  } finally {
    await a.close()
  }
})

test('a read retrying through an outage when its adapter closes fails CLOSED at once, not UNAVAILABLE at its timeout', async () => {
  const proxy = await new FaultProxy(db.server.port).start()
  const a = await postgresAdapter({ url: db.server.url(ns(), proxy.port), timeout: 10_000 })
  try {
    proxy.drop()
    const read = a.get('k').then(
      () => 'answered',
      (err: { code?: string }) => err.code,
    )
    await sleep(300)
    const t = performance.now()
    await a.close()
    expect(await read).toBe('CLOSED')
    expect(performance.now() - t).toBeLessThan(3_000)
  } finally {
    await a.close()
    await proxy.stop()
  }
})

test('calls running or waiting for a connection when their adapter closes complete; the pool ends after them', async () => {
  const name = ns()
  const a = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  await a.commit([], [{ type: 'set', key: 'k', value: 0 }])
  const hold = await holdNamespace(name)
  try {
    // The namespace's row held: a commit waits for it on the pool's only connection.
    const write = a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    await sleep(100)
    // Waits for that connection.
    const read = a.get('k')
    await sleep(100)
    let closed = false
    const closing = a.close().then(() => (closed = true))
    await sleep(200)
    expect(closed).toBe(false)
    await hold.release()
    expect((await write).ok).toBe(true)
    expect((await read)?.value).toBe(1)
    await closing
    await until(async () => (await backends()) === 0, 5_000)
  } finally {
    await hold.end()
    await a.close()
  }
})

test("a call on the caller's pool whose connection is reset is tried again, and the process goes on", async () => {
  const name = ns()
  const proxy = await new FaultProxy(db.server.port).start()
  const pool = new pg.Pool({ connectionString: db.server.url(undefined, proxy.port), max: 1 })
  pool.on('error', () => {}) // its owner's ear (see countedPool)
  const a = await postgresAdapter({ pool, namespace: name })
  await a.commit([], [{ type: 'set', key: 'k', value: 0 }])
  const hold = await holdNamespace(name)
  try {
    // The commit waits for the namespace's row on the pool's one connection, which is then reset
    // (node-postgres emits 'error' on a client whose socket fails, also while its query runs).
    const write = a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    await sleep(200)
    const errors = await uncaught(async () => {
      proxy.cut()
      await sleep(200)
    })
    expect(errors).toEqual([])
    await hold.release()
    expect((await write).ok).toBe(true)
    expect((await a.get('k'))?.value).toBe(1)
  } finally {
    await hold.end()
    await a.close()
    await pool.end()
    await proxy.stop()
  }
})

test('a call that gets no answer within callTimeout has its connection ended and fails UNAVAILABLE, saying so, with the cause', async () => {
  const proxy = await new FaultProxy(db.server.port).start()
  const a = await postgresAdapter({ url: db.server.url(ns(), proxy.port), listen: false, callTimeout: 300, timeout: 200 })
  try {
    proxy.blackhole()
    const t = performance.now()
    const err = (await a.commit([], [{ type: 'set', key: 'k', value: 1 }]).catch((e: unknown) => e)) as { code?: string; message?: string; cause?: unknown }
    expect(performance.now() - t).toBeLessThan(2_000)
    expect(err).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/did not answer within 300 ms \(it may or may not have been applied\)/) })
    expect(err.cause).toBeInstanceOf(Error)
    // Not kept waiting for that answer: the next call, on a new connection, is answered.
    proxy.heal()
    expect(await a.get('k')).toBeUndefined()
  } finally {
    await a.close()
    await proxy.stop()
  }
})

test('a connection whose server is going away is not handed to the call waiting for one (checkouts of the pool, counted)', async () => {
  const name = ns()
  const counted = countedPool(db.server.url(), 1)
  const a = await postgresAdapter({ pool: counted.pool, namespace: name, listen: false })
  await a.commit([], [{ type: 'set', key: 'k', value: 0 }])
  const hold = await holdNamespace(name)
  try {
    const before = counted.calls()
    const write = a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    await sleep(150)
    // Waits for the pool's one connection, which the commit holds.
    const read = a.get('k')
    await sleep(150)
    // Postgres tells the session FATAL 57P01 as it ends it: the commit fails there and is tried again.
    await db.admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%commit%' AND wait_event_type = 'Lock'`)
    expect((await read)?.value).toBe(0)
    await hold.release()
    expect((await write).ok).toBe(true)
    // The commit twice, the read once: a read handed the dying connection would have needed a second.
    expect(counted.calls() - before).toBe(3)
  } finally {
    await hold.end()
    await a.close()
    await counted.pool.end()
  }
})
