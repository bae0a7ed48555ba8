/**
 * A Postgres for one test file: started before its tests (in a mutation run,
 * a fresh database of the shared server: see startPostgres), with a plain
 * `pg` client to look at it as its owner, both gone after the file.
 */
import pg from 'pg'
import { afterAll, beforeAll } from 'vitest'
import { startPostgres, type PostgresServer } from './server'

export interface TestPostgres {
  /** The server (valid inside the file's tests). */
  readonly server: PostgresServer
  /** A client of the test database, as its owner. */
  readonly admin: pg.Client
  /** A namespace no other test of the file uses: `<prefix>-1`, `<prefix>-2` … */
  ns(): string
}

export function usePostgres(prefix: string): TestPostgres {
  let server: PostgresServer | undefined
  let admin: pg.Client | undefined
  let n = 0
  beforeAll(async () => {
    server = await startPostgres()
    admin = new pg.Client({ connectionString: server.url() })
    await admin.connect()
  })
  afterAll(async () => {
    await admin?.end()
    await server?.dispose()
  })
  return {
    get server() {
      return server!
    },
    get admin() {
      return admin!
    },
    ns: () => `${prefix}-${++n}`,
  }
}

/** A pool of `connectionString` whose checkouts are counted: one a call of the adapter's. A real pool; only `connect` is wrapped. */
export function countedPool(connectionString: string, max = 2): { pool: pg.Pool; calls: () => number } {
  const pool = new pg.Pool({ connectionString, max })
  // Its owner's ear, as node-postgres asks of every pool: `end()` resolves before its clients have closed, and
  // a server stopping at the end of the file tells those still closing (FATAL 57P01) through the pool.
  pool.on('error', () => {})
  const connect = pool.connect.bind(pool)
  let calls = 0
  pool.connect = (() => {
    calls++
    return connect()
  }) as typeof pool.connect
  return { pool, calls: () => calls }
}

/** A pool of `connectionString` whose clients count the queries whose text contains `part` (a real pool; only `connect` is wrapped). */
export function queryCountingPool(connectionString: string, part: string, max = 2): { pool: pg.Pool; calls: () => number } {
  const pool = new pg.Pool({ connectionString, max })
  pool.on('error', () => {})
  const connect = pool.connect.bind(pool)
  const wrapped = new WeakSet<object>()
  let calls = 0
  pool.connect = (async () => {
    const client = await connect()
    if (!wrapped.has(client)) {
      wrapped.add(client)
      const query = client.query.bind(client) as (...a: unknown[]) => unknown
      client.query = ((...a: unknown[]) => {
        const q = a[0] as string | { text?: string }
        if ((typeof q === 'string' ? q : (q?.text ?? '')).includes(part)) calls++
        return query(...a)
      }) as typeof client.query
    }
    return client
  }) as typeof pool.connect
  return { pool, calls: () => calls }
}
