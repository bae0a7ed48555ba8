/**
 * The Postgres connections of the adapters of a process: a pool per
 * connection string (or the caller's own pool), shared by every adapter
 * opened with it, the schemas known to be ready on it, and the per-namespace
 * state that lives as long as it (`spaces`: watch followers).
 *
 * Calls run on a client checked out for the call, under a time limit: a
 * call that passes it has its connection destroyed (node-postgres would
 * otherwise keep the client waiting for an answer that may never come) and
 * fails with `UnavailableError`.
 *
 * @module
 */
import { systemClock } from '../../core/time/clock'
import { ClosedError, UnavailableError } from '../../core/contract/errors'
import { isConnectionFailure, loadPg, pgError, socketOf, unknownOutcome, type Pg, type PgPool, type PgPoolClient, type PgResult } from './load'
import { ensureSchema } from './sql'

/** Defaults for pools the adapter opens; the caller's `pg` options override them. */
const POOL_DEFAULTS = {
  max: 10,
  // An idle pool does not keep Node running (a process whose clients hold nothing exits).
  allowExitOnIdle: true,
  connectionTimeoutMillis: 5_000,
  idleTimeoutMillis: 10_000,
  application_name: 'zaris',
}

/** A named statement: prepared on a connection the first time it runs there. */
export interface Named {
  name: string
  text: string
}

/** A pool shared by the adapters opened with the same connection string and options. */
export interface Connection {
  /** node-postgres, as loaded. */
  readonly pg: Pg
  /** The pool every statement goes through (the caller's own, or one opened for the URL). */
  readonly pool: PgPool
  /** Options a LISTEN connection opens with (undefined: the caller's pool does not say). */
  readonly listenOptions: Record<string, unknown> | undefined
  /** Per-schema and per-namespace state that lives as long as the connection, closed with it. */
  readonly spaces: Map<string, { close(): void }>
  /** Resolves once `schema` holds this version's tables (once per schema). */
  ready(schema: string, create: boolean): Promise<void>
  /**
   * Runs one statement within `timeoutMs`; a failure becomes a zaris error
   * naming `what` (see `pgError`), its cause the driver's error.
   */
  query<R>(what: string, text: string | Named, values: unknown[], timeoutMs: number): Promise<PgResult<R>>
  /**
   * Whether statements may be named (prepared once per server connection);
   * false once a transaction pooler showed it does not keep them.
   */
  named: boolean
  /** How many adapters share it. */
  users: number
  /** One adapter is done with it; the last one closes a pool it opened. */
  release(): Promise<void>
}

const shared = new Map<string, Promise<Connection>>()
const byPool = new WeakMap<object, Connection>()

/**
 * The shared pool for `connectionString` with `options`, opened on first
 * use. Options that cannot be compared (functions, sockets) get a pool of
 * their own.
 */
export async function shareUrl(connectionString: string, options: Record<string, unknown> | undefined): Promise<Connection> {
  const key = poolKey(connectionString, options)
  const open = async (forget?: () => void) => {
    const pg = await loadPg()
    const settings = { ...POOL_DEFAULTS, ...options, connectionString }
    return wrap(pg, new pg.Pool(settings), settings, true, forget)
  }
  if (key === null) return adopt(await open())
  let entry = shared.get(key)
  // A failed open (node-postgres missing) is kept: it fails alike for every later adapter.
  if (!entry) shared.set(key, (entry = open(() => shared.delete(key))))
  return adopt(await entry)
}

/** One more adapter uses `connection`. */
function adopt(connection: Connection): Connection {
  connection.users++
  return connection
}

/** The key of the pool shared by these settings; null when they cannot be compared. */
function poolKey(connectionString: string, options: Record<string, unknown> | undefined): string | null {
  let comparable = true
  try {
    const key = JSON.stringify([connectionString, options ?? {}], (_k, v: unknown) => {
      if (typeof v === 'function' || typeof v === 'symbol') comparable = false
      return v
    })
    return comparable ? key : null
  } catch {
    // Circular (a socket) or a BigInt.
    return null
  }
}

/** The shared use of a pool the caller opened (never ended by zaris). */
export async function sharePool(pool: PgPool): Promise<Connection> {
  const pg = await loadPg()
  let connection = byPool.get(pool)
  if (!connection) byPool.set(pool, (connection = wrap(pg, pool, pool.options as Record<string, unknown> | undefined, false, () => byPool.delete(pool))))
  return adopt(connection)
}

function wrap(pg: Pg, pool: PgPool, settings: Record<string, unknown> | undefined, owned: boolean, forget?: () => void): Connection {
  // An idle client whose server went away emits 'error' on the pool; unheard, Node would crash. And
  // every client gets an ear of its own when it is made: node-postgres's pool can hand a new client to
  // a checkout that already failed (its wait timed out as the connection came up), which then holds
  // it with no listener at all (seen when Postgres was killed under 16 workers).
  if (owned) {
    pool.on('error', () => {})
    pool.on('connect', (client) => client.on('error', unheard))
  }
  const schemas = new Map<string, Promise<void>>()
  // Calls under way: the pool is ended only once they are done (a release of a hold may be one of them).
  let inflight = 0
  let drained: (() => void) | undefined
  let ended = false
  const connection: Connection = {
    pg,
    pool,
    listenOptions: settings,
    spaces: new Map(),
    users: 0,
    named: true,
    ready(schema, create) {
      let done = schemas.get(schema)
      if (!done) {
        done = ensureSchema({ query: (text) => connection.query(`the setup of the zaris tables in schema ${schema}`, text, [], 60_000) }, schema, create)
        done.catch(() => schemas.delete(schema))
        schemas.set(schema, done)
      }
      return done
    },
    async query(what, text, values, timeoutMs) {
      if (ended) throw new ClosedError('the Postgres adapter is closed')
      inflight++
      try {
        return await run(pool, what, text, values, timeoutMs)
      } finally {
        if (--inflight === 0) drained?.()
      }
    },
    async release() {
      if (--connection.users > 0) return
      forget?.()
      for (const space of connection.spaces.values()) space.close()
      connection.spaces.clear()
      if (inflight > 0) await new Promise<void>((resolve) => (drained = resolve))
      ended = true
      if (owned) await pool.end().catch(() => {})
    },
  }
  return connection
}

/** The ear of every client the adapter checks out (see run). */
const unheard = () => {}

async function run<R>(pool: PgPool, what: string, text: string | Named, values: unknown[], timeoutMs: number): Promise<PgResult<R>> {
  let client: PgPoolClient
  try {
    client = await pool.connect()
  } catch (err) {
    throw pgError(err, what)
  }
  // A client whose connection fails emits 'error' besides failing its query, and a checked-out client
  // has no ear of its pool's: unheard, the event would crash the process. This ear stays for the
  // client's life (a caller's pool gets no 'connect' ear from zaris).
  if (!client.listeners('error').includes(unheard)) client.on('error', unheard)
  let timedOut = false
  const timer = systemClock.setTimeout(() => {
    timedOut = true
    // Ends the query at once (it fails with a connection error); the client is then destroyed.
    socketOf(client)?.destroy()
  }, timeoutMs)
  try {
    // Without values (and a name), node-postgres sends a string as a simple query, which may hold several statements.
    const result = (await client.query(typeof text === 'string' ? { text, values } : { ...text, values })) as PgResult<R>
    client.release()
    return result
  } catch (err) {
    // A connection that failed, or whose server is going away (its socket may not have closed yet), is
    // not handed to the next call; one that only refused this statement is.
    client.release(isConnectionFailure(err))
    if (timedOut) throw new UnavailableError(`Postgres ${what} did not answer within ${timeoutMs} ms${unknownOutcome(what)}`, { cause: err })
    throw pgError(err, what)
  } finally {
    systemClock.clearTimeout(timer)
  }
}
