/**
 * The Postgres adapter, `postgres://user:pass@host:5432/db?ns=NAME` (and
 * `postgresql://`): a zaris store in the database an application already
 * runs, and fenced writes inside the application's own transactions
 * ({@link fence}). Node only; node-postgres (`pg`) is an optional peer
 * dependency loaded when this adapter is first used.
 *
 * What each part of the contract is on Postgres:
 *
 * - Every operation is one call of one statement: one transaction of
 *   ordinary SQL (functions in the store's schema, `sql/`), with no session
 *   state and no session advisory locks, so it works unchanged behind
 *   PgBouncer in transaction mode.
 * - revision: a sequence shared by the schema's namespaces (tokens are unique
 *   in the schema; a namespace sees gaps, as on etcd), taken under the
 *   namespace's row lock, so revisions become visible in order. It survives
 *   restarts and crashes, so `seen` is not needed.
 * - TTLs run on Postgres's clock (`clock_timestamp()`); an expiry takes its
 *   own revision and is logged as `expire` once (reads and commits expire
 *   what they find due; a watched namespace's follower expires the rest at
 *   their deadlines).
 * - watch: the namespace's log, read after a cursor, woken by LISTEN/NOTIFY
 *   where the connection allows it, polled where it does not
 *   (`follower.ts`, `listener.ts`); the most recent `historySize` events kept.
 * - a commit sent again after its answer was lost is answered, not applied
 *   twice (`commit.ts`).
 *
 * @module
 */
import type { Adapter, Capabilities, Check, CommitOptions, CommitResult, Entry, HistoryLimits, HistoryPage, ListOptions, ListPage, Op, Unsubscribe, WatchSink } from '../../core/contract/adapter'
import { InvalidArgumentError } from '../../core/contract/errors'
import { checkCommitArgs, checkKey, checkListOptions, checkOptions, checkPrefix, checkRequestId, checkWatchArgs, describe } from '../../core/contract/validate'
import { AdapterLife } from '../kit/life'
import { runCommit, type Target } from './commit'
import { sharePool, shareUrl, type Connection } from './connection'
import { Follower } from './follower'
import { Listener } from './listener'
import type { PgPool } from './load'
import { ParkAnswers, runParked } from './parked'
import { readEntry, readHistory, readPage } from './reads'
import { checkSchema, DEFAULT_SCHEMA } from './sql'
import { parsePostgresUrl, redactPostgresUrl } from './url'

export { fence, type FenceOptions } from './fence'
export { schemaSql, SCHEMA_VERSION } from './sql'
export { parsePostgresUrl } from './url'
export type { PgPool, PgPoolClient, PgQueryable } from './load'

/** Options of {@link postgresAdapter}. */
export interface PostgresAdapterOptions {
  /** `postgres://user:pass@host:5432/db?ns=NAME[&schema=NAME]` (or `postgresql://`). Give this or `pool`. */
  url?: string
  /** A `pg.Pool` you opened yourself; the adapter uses it and leaves it open on `close()`. Give this or `url`. */
  pool?: PgPool
  /** The zaris namespace: stores with different namespaces never see each other. Default: the URL's `ns`, else `default`. */
  namespace?: string
  /** The Postgres schema of zaris's tables (lower-case letters, digits, _). Default: the URL's `schema`, else `zaris`. */
  schema?: string
  /** Create the tables on first use when they are missing (default true); false: see `schemaSql`. */
  createSchema?: boolean
  /** node-postgres pool options for the pool opened from `url` (for example `ssl`, `max`). */
  pg?: Record<string, unknown>
  /**
   * Where watches listen for NOTIFY: true (default) opens one connection with the pool's settings;
   * a URL listens there instead (a direct connection when the pool goes through a pooler in
   * transaction mode); false never listens (watches poll).
   */
  listen?: boolean | string
  /** ms between reads of the log while notifications are not known to arrive. Default 100. */
  pollInterval?: number
  /** How many recent events the log keeps per namespace, for watches that resume from a revision. Default 10 000. */
  historySize?: number
  /** How long (ms) a commit's answer is kept, so a commit sent again is answered, not applied twice. Default 120 000. */
  requestRetention?: number
  /** Most ms one call may wait for Postgres. Default 10 000. */
  callTimeout?: number
  /** Most ms an operation keeps trying while Postgres cannot answer. Default 15 000. */
  timeout?: number
}

/**
 * The Postgres adapter: the five members of the contract, `history`, and `position()`.
 *
 * @example
 * const adapter = await postgresAdapter({ url: 'postgres://app@db:5432/app?ns=jobs' })
 * const { revision, epoch } = await adapter.position()
 */
export interface PostgresAdapter extends Adapter {
  /** The schema of its tables (what `fence` needs when it is not `zaris`). */
  readonly schema: string
  /**
   * Whether its watches are woken by NOTIFY now; false while they poll the
   * log every `pollInterval` ms (no watch yet, `listen: false`, a pooler in
   * transaction mode that passes no notifications, or a LISTEN connection being opened again).
   */
  readonly listening: boolean
  /** The namespace's revision, and its epoch: an id of this life of the namespace (what a zaris node tells watchers). */
  position(): Promise<{ revision: number; epoch: string }>
  history(prefix: string, after: number, limits: HistoryLimits): Promise<HistoryPage>
}

const NAMESPACE = /^[A-Za-z0-9._~-]{1,128}$/
/** ms between reads of the log while notifications arrive (a safety net: they are never relied on). */
const SAFETY_POLL_MS = 2_000

/**
 * Opens a zaris store in Postgres. Resolves once its tables are ready.
 *
 * @example
 * import { Client } from 'zaris'
 * import { postgresAdapter } from 'zaris/postgres'
 * const client = new Client(await postgresAdapter({ url: process.env.DATABASE_URL, namespace: 'jobs' }))
 */
export async function postgresAdapter(options: PostgresAdapterOptions): Promise<PostgresAdapter> {
  const o = checkOptions<PostgresAdapterOptions>(options)
  if ((o.url === undefined) === (o.pool === undefined)) throw new InvalidArgumentError('postgresAdapter needs exactly one of url or pool')
  if (o.url !== undefined && typeof o.url !== 'string') throw new InvalidArgumentError(`url must be a string, got ${describe(o.url)}`)
  const parsed = o.url === undefined ? undefined : parsePostgresUrl(o.url)
  const namespace = o.namespace ?? parsed?.namespace ?? 'default'
  if (typeof namespace !== 'string' || !NAMESPACE.test(namespace)) {
    throw new InvalidArgumentError(`namespace must be 1-128 letters, digits or . _ ~ -, got ${describe(namespace)}`)
  }
  const schema = checkSchema(o.schema ?? parsed?.schema ?? DEFAULT_SCHEMA)
  if (o.pool !== undefined && (typeof o.pool !== 'object' || o.pool === null || typeof o.pool.connect !== 'function' || typeof o.pool.query !== 'function')) {
    throw new InvalidArgumentError('pool must be a pg Pool')
  }
  if (o.pg !== undefined && (typeof o.pg !== 'object' || o.pg === null)) throw new InvalidArgumentError('pg must be an object of node-postgres pool options')
  if (o.listen !== undefined && typeof o.listen !== 'boolean' && typeof o.listen !== 'string') {
    throw new InvalidArgumentError(`listen must be true, false or a Postgres URL, got ${describe(o.listen)}`)
  }
  if (o.createSchema !== undefined && typeof o.createSchema !== 'boolean') throw new InvalidArgumentError(`createSchema must be a boolean, got ${describe(o.createSchema)}`)
  const settings = {
    pollInterval: checkCount(o.pollInterval ?? 100, 'pollInterval'),
    history: checkCount(o.historySize ?? 10_000, 'historySize'),
    retention: checkCount(o.requestRetention ?? 120_000, 'requestRetention'),
    callTimeout: checkCount(o.callTimeout ?? 10_000, 'callTimeout'),
    timeout: checkCount(o.timeout ?? 15_000, 'timeout'),
  }
  const listen = typeof o.listen === 'string' ? { connectionString: parsePostgresUrl(o.listen).connectionString } : o.listen === false ? false : undefined
  const connection = parsed ? await shareUrl(parsed.connectionString, o.pg) : await sharePool(o.pool!)
  const known = { revision: 0 }
  try {
    await connection.ready(schema, o.createSchema ?? true)
    // Where the namespace stands, so that a commit whose answer is lost can tell whether the log still reaches back to it.
    const r = await connection.query<{ revision: string }>('open', `SELECT revision FROM ${schema}.stores WHERE ns = $1`, [namespace], settings.callTimeout)
    known.revision = Number(r.rows[0]?.revision ?? 0)
  } catch (err) {
    await connection.release()
    throw err
  }
  const { pollInterval, ...kept } = settings
  const key = followerKey(schema, namespace)
  // The namespace's follower in this process, if any, reads at once after a write here (see followerOf).
  const changed = () => (connection.spaces.get(key) as SharedFollower | undefined)?.follower.notify()
  return new NamespaceAdapter({ connection, schema, namespace, known, contended: new Set(), lined: { until: 0 }, changed, ...kept }, Listener.of(connection, schema, listen), pollInterval)
}

/**
 * Creates the adapter for a `postgres://` or `postgresql://` URL (used by
 * `connect`); `options.postgres` holds more {@link PostgresAdapterOptions}.
 *
 * @example
 * const adapter = await fromUrl('postgres://app@127.0.0.1:5432/app?ns=jobs', {})
 */
export function fromUrl(url: string, options: { readonly [option: string]: unknown }): Promise<PostgresAdapter> {
  const extra = options.postgres
  if (extra !== undefined && (typeof extra !== 'object' || extra === null)) throw new InvalidArgumentError('options.postgres must be an object of Postgres adapter options')
  return postgresAdapter({ ...(extra as PostgresAdapterOptions | undefined), url })
}

/** A URL without its password, for messages and `zaris serve`. */
export const redact = redactPostgresUrl

class NamespaceAdapter implements PostgresAdapter {
  readonly name = 'postgres'
  /** The store hands over: waiting commits park in Postgres and are tried in the step of the change (sql/park.ts). */
  readonly capabilities: Capabilities = { history: true, commitOnChange: true, keepParked: true, handover: true, orElse: true }
  readonly schema: string
  readonly #target: Target
  readonly #listener: Listener
  readonly #pollInterval: number
  readonly #life = new AdapterLife('postgres')
  #follower: { follower: Follower; release(): void } | undefined
  readonly #answers: ParkAnswers
  /** The waits of this adapter's parked commits (ended on close), and the commits still waiting. */
  readonly #waits = new Set<() => void>()
  readonly #parkedNow = new Set<Promise<unknown>>()

  constructor(target: Target, listener: Listener, pollInterval: number) {
    this.#target = target
    this.schema = target.schema
    this.#listener = listener
    this.#pollInterval = pollInterval
    this.#answers = ParkAnswers.of(target, listener, pollInterval)
  }

  get listening(): boolean {
    return this.#follower !== undefined && this.#listener.working
  }

  async get(key: string): Promise<Entry | undefined> {
    checkKey(key)
    this.#life.assertOpen()
    return readEntry(this.#target, key)
  }

  async list(prefix: string, options?: ListOptions): Promise<ListPage> {
    checkPrefix(prefix)
    const { after, limit } = checkListOptions(options)
    this.#life.assertOpen()
    return readPage(this.#target, prefix, after, limit)
  }

  /**
   * One commit, as one call; one sent with `waitChange` may park in the
   * store (parked.ts). `options.seen` is not used: the revisions are a
   * Postgres sequence, which never goes back, also after a crash.
   */
  async commit(checks: Check[], ops: Op[], options?: CommitOptions): Promise<CommitResult> {
    checkCommitArgs(checks, ops)
    const requestId = checkRequestId(options?.requestId)
    this.#life.assertOpen()
    const ms = options?.waitChange
    if (ms === undefined || !(ms > 0)) return runCommit(this.#target, checks, ops, requestId)
    const parked = runParked({ target: this.#target, answers: this.#answers, waits: this.#waits }, checks, ops, ms, options!, requestId)
    this.#parkedNow.add(parked)
    try {
      return await parked
    } finally {
      this.#parkedNow.delete(parked)
    }
  }

  async watch(prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe> {
    checkWatchArgs(prefix, sink, fromRevision)
    this.#life.assertOpen()
    this.#follower ??= followerOf(this.#target, this.#listener, this.#pollInterval)
    return this.#life.track(await this.#follower.follower.subscribe(prefix, sink, fromRevision))
  }

  async history(prefix: string, after: number, limits: HistoryLimits): Promise<HistoryPage> {
    checkPrefix(prefix)
    this.#life.assertOpen()
    return readHistory(this.#target, prefix, after, limits)
  }

  async position(): Promise<{ revision: number; epoch: string }> {
    this.#life.assertOpen()
    const { connection, schema, namespace, callTimeout } = this.#target
    // The namespace's row is made here if it is new, so its epoch is the one its first write will keep.
    const r = await connection.query<{ revision: string; epoch: string }>(
      'position',
      `SELECT revision, epoch FROM ${schema}.lock_store($1)`,
      [namespace],
      callTimeout,
    )
    return { revision: Number(r.rows[0]!.revision), epoch: r.rows[0]!.epoch }
  }

  async close(): Promise<void> {
    if (this.#life.closed) return
    // Parked commits are taken out of park first (best effort: the store drops them after their deadline).
    for (const cancel of [...this.#waits]) cancel()
    await Promise.allSettled([...this.#parkedNow])
    if (!this.#life.close()) return
    this.#follower?.release()
    await this.#target.connection.release()
  }
}

interface SharedFollower {
  follower: Follower
  users: number
  close(): void
}

/** The namespace's follower on the target's connection, shared by the adapters of the process. */
function followerOf(target: Target, listener: Listener, pollInterval: number): { follower: Follower; release(): void } {
  const { connection, schema, namespace } = target
  const key = followerKey(schema, namespace)
  let shared = connection.spaces.get(key) as SharedFollower | undefined
  if (!shared) {
    const follower = new Follower({
      connection,
      schema,
      namespace,
      callTimeout: target.callTimeout,
      pollInterval: () => (listener.working ? SAFETY_POLL_MS : pollInterval),
    })
    const s: SharedFollower = {
      follower,
      users: 0,
      // Closing stops the notifications; the follower's read loop ends with its last subscriber (each
      // adapter ended its watches first).
      close: listener.follow(namespace, () => follower.notify()),
    }
    connection.spaces.set(key, (shared = s))
  }
  const s = shared
  s.users++
  let released = false
  return {
    follower: s.follower,
    release() {
      if (released) return
      released = true
      if (--s.users > 0) return
      s.close()
      if (connection.spaces.get(key) === s) connection.spaces.delete(key)
    },
  }
}

function followerKey(schema: string, namespace: string): string {
  return `follower\u0000${schema}\u0000${namespace}`
}

function checkCount(n: unknown, name: string): number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError(`${name} must be an integer >= 1, got ${describe(n)}`)
  return n
}

export type { Connection }
