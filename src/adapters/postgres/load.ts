/**
 * Loads node-postgres (`pg`) on first use (`../kit/load`), the minimal shapes
 * of it the adapter drives, and turns its failures into zaris errors.
 *
 * The shapes are the adapter's own (not `@types/pg`), so that zaris's
 * declarations need no types package, and a pool of any node-postgres 8
 * release fits.
 *
 * @module
 */
import { RevisionExhaustedError, UnauthorizedError, UnavailableError, UnsupportedError, ZarisError } from '../../core/contract/errors'
import { loadOptional } from '../kit/load'

/** A query's answer: its rows. */
export interface PgResult<R = Record<string, unknown>> {
  rows: R[]
}

/** What runs a query: a `pg.Client`, a pool's client, or a `pg.Pool`. */
export interface PgQueryable {
  /** Runs one statement with its parameters (`$1`, `$2` …). */
  query(text: string, values?: unknown[]): Promise<PgResult<any>>
}

/** A client checked out of a pool. `release(true)` destroys it instead of keeping it. */
export interface PgPoolClient extends PgQueryable {
  /** Runs a named statement (node-postgres prepares it on the connection the first time). */
  query(config: { name?: string; text: string; values: unknown[] }): Promise<PgResult<any>>
  query(text: string, values?: unknown[]): Promise<PgResult<any>>
  /** Gives the client back to its pool, or destroys it (`true` or an error). */
  release(destroy?: boolean | Error): void
  /** Hears the client's connection failures (see connection.ts, run). */
  on(event: 'error', listener: () => void): unknown
  /** The client's `error` listeners, so that zaris adds its own once. */
  listeners(event: 'error'): unknown[]
}

/** A `pg.Pool` as the adapter uses it. */
export interface PgPool extends PgQueryable {
  /** Checks a client out, for a transaction of several statements. */
  connect(): Promise<PgPoolClient>
  /** Closes every client of the pool. */
  end(): Promise<void>
  /** Hears a pooled client's error (a server gone) or a new client. */
  on(event: 'error', listener: (err: Error) => void): unknown
  on(event: 'connect', listener: (client: { on(event: 'error', listener: () => void): unknown }) => void): unknown
  /** The options it was made with (node-postgres keeps them): the adapter opens its LISTEN connection with them. */
  readonly options?: object
}

/** A `pg.Client` as the LISTEN connection uses it. */
export interface PgClient extends PgQueryable {
  connect(): Promise<void>
  end(): Promise<void>
  on(event: 'notification', listener: (msg: { channel: string; payload: string }) => void): unknown
  on(event: 'error', listener: (err: Error) => void): unknown
  on(event: 'end', listener: () => void): unknown
}

/** The two classes of node-postgres the adapter uses. */
export interface Pg {
  Pool: new (options: Record<string, unknown>) => PgPool
  Client: new (options: Record<string, unknown>) => PgClient
}

/**
 * Imports node-postgres (or `name`, for tests), or throws an
 * `UnsupportedError` that says how to install it.
 */
export async function loadPg(name = 'pg'): Promise<Pg> {
  const { mod, inner } = await loadOptional(name, 'pg', 'the Postgres adapter')
  const pg = (typeof mod.Pool === 'function' ? mod : inner) as Partial<Pg> | undefined
  if (typeof pg?.Pool !== 'function' || typeof pg.Client !== 'function') {
    throw new UnsupportedError(`the module ${JSON.stringify(name)} does not export node-postgres's Pool and Client`)
  }
  return pg as Pg
}

/** The socket under a node-postgres client (not public API: undefined should a version not have it there). */
export function socketOf(client: object): { unref(): void; destroy(): void } | undefined {
  return (client as { connection?: { stream?: { unref(): void; destroy(): void } } }).connection?.stream
}

/** An error Postgres sent, with its SQLSTATE. */
interface PgError {
  code?: unknown
  errno?: unknown
  message?: unknown
  detail?: unknown
}

/** The SQLSTATE of a Postgres error (or of the cause of a zaris error made from one), or undefined for a failure of the connection itself. */
export function sqlState(err: unknown): string | undefined {
  if (err instanceof ZarisError) return sqlState(err.cause)
  const e = err as PgError | null
  const code = e?.code
  // A socket's own error can look like one (EPIPE: five capitals) but carries an errno: the connection failed.
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && e?.errno === undefined ? code : undefined
}

/**
 * Whether a failure leaves a call's outcome unknown: the connection broke
 * (no SQLSTATE) or the server is going away (class 08, 57P0x), so a commit
 * may or may not have been applied.
 */
export function isConnectionFailure(err: unknown): boolean {
  if (err instanceof ZarisError) return err.code === 'UNAVAILABLE'
  const state = sqlState(err)
  return state === undefined || state.startsWith('08') || /^57P0[1-3]$/.test(state)
}

/**
 * A zaris error for a failed Postgres call: `UnavailableError` when the
 * server could not be reached or cannot answer now (the call may or may
 * not have been applied), `UnauthorizedError` for refused credentials or
 * privileges, `RevisionExhaustedError` when the revisions ran out, and
 * `ZarisError('INTERNAL')` for anything else Postgres refused.
 */
export function pgError(err: unknown, what: string): ZarisError {
  if (err instanceof ZarisError) return err
  const message = err instanceof Error ? err.message : String(err)
  const state = sqlState(err)
  if (state === '28P01' || state === '28000' || state === '42501') {
    return withCause(new UnauthorizedError(`Postgres refused ${what}: ${message}`), err)
  }
  if (state === '2200H') {
    return withCause(
      new RevisionExhaustedError(`the store has taken the largest safe integer as a revision: it can take no more writes without losing the order of its revisions; move its data to a new schema`),
      err,
    )
  }
  if (isConnectionFailure(err) || state === '53300' || state === '57014' || state === '40001' || state === '40P01') {
    return new UnavailableError(`Postgres ${what} failed${unknownOutcome(what)}: ${message}`, { cause: err })
  }
  return new ZarisError('INTERNAL', `Postgres refused ${what}: ${message} (SQLSTATE ${state})`, { cause: err })
}

/** What a failed call's message adds about its outcome: only a commit's matters to the caller (a read changes nothing). */
export function unknownOutcome(what: string): string {
  return what === 'commit' ? ' (it may or may not have been applied)' : ''
}

/** Keeps the driver's error as the cause (these error classes take a message only). */
function withCause(error: ZarisError, cause: unknown): ZarisError {
  Object.defineProperty(error, 'cause', { value: cause, configurable: true, writable: true })
  return error
}
