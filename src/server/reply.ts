/**
 * The handler's own terms for a request ({@link Exchange}) and its answer
 * ({@link Reply}), and the helpers every route answers with: JSON bodies,
 * errors as `{ error: { code, message } }` (never a stack trace), 404 and
 * 405, and the query of a GET read strictly.
 *
 * @module
 */
import { InvalidArgumentError, TooLargeError, isZarisError, type ZarisError } from '../core/contract/errors'
import { statusOf } from './protocol'
import type { ParkConnection } from './parking'

/** One request as the handler sees it: enough of `Request` and of Node's IncomingMessage. */
export interface Exchange {
  /** The HTTP method. */
  method: string
  /** The request URL; only its path and query are used. */
  url: URL
  /** A request header (lowercase name), or null. */
  header(name: string): string | null
  /** The body as text; rejects with a TOO_LARGE error past `limit` bytes. */
  body(limit: number): Promise<string>
  /** The connection it came on, where the server knows it: its parked commits are bounded and dropped with it. Read only by a commit that may wait (reading it may set up listeners on the socket). */
  connection?: ParkConnection
}

/**
 * Where a streamed reply writes. The server keeps the peer's unread output
 * bounded (a peer too far behind is cut off, which stops the stream).
 */
export interface StreamSink {
  /** Sends a chunk; false when the peer has enough unread: write more only after `drain`. */
  write(chunk: string): boolean
  /** Calls `fn` once the peer has taken what was written (at once if nothing waits). */
  drain(fn: () => void): void
  /** Ends the response. */
  end(): void
}

/** A reply: a complete body, or a stream started once headers are out (returns its stop function). */
export type Reply =
  | { status: number; headers: Record<string, string>; body: string }
  | { status: number; headers: Record<string, string>; stream: (out: StreamSink) => () => void }

/** The headers of every JSON answer. */
export const JSON_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }

/** A JSON answer. */
export function json(status: number, value: unknown, headers: Record<string, string> = {}): Reply {
  return { status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(value) }
}

/** A JSON answer whose body is serialized already. */
export function jsonText(status: number, body: string, headers: Record<string, string> = {}): Reply {
  return { status, headers: { ...JSON_HEADERS, ...headers }, body }
}

/** The answer to a failure: a ZarisError as itself, anything else as a bare 500 (reported to `log`, never sent). */
export function errorReply(err: unknown, log: (line: string) => void): Reply {
  if (isZarisError(err)) {
    const headers: Record<string, string> = {}
    if (err.code === 'UNAUTHORIZED') headers['www-authenticate'] = 'Bearer'
    return json(statusOf(err.code), { error: err.toJSON() }, headers)
  }
  log(`zaris node: internal error: ${err instanceof Error ? err.message : String(err)}`)
  return json(500, { error: { code: 'INTERNAL', message: 'internal error' } })
}

/** 404 for a path no route serves (`what` names it; a path in it is cut at 200 characters by the caller). */
export function notFound(what: string): Reply {
  return json(404, { error: { code: 'INVALID_ARGUMENT', message: `no such endpoint: ${what}` } })
}

/** 405, naming the method to use. */
export function methodNotAllowed(allow: string): Reply {
  return json(405, { error: { code: 'INVALID_ARGUMENT', message: `method not allowed; use ${allow}` } }, { allow })
}

/** A TOO_LARGE error for a body past `limit` bytes. */
export function tooLarge(limit: number): ZarisError {
  return new TooLargeError(`body: larger than ${limit} bytes`)
}

/** An error as the wire carries it. */
export function toWire(err: Error): { code: string; message: string } {
  return isZarisError(err) ? err.toJSON() : { code: 'INTERNAL', message: 'internal error' }
}

/**
 * The query of a GET as a record; a name given twice is refused. A record
 * without a prototype, so `__proto__` and `constructor` are names like any
 * other, and the route's schema refuses them as unknown.
 */
export function queryOf(ex: Exchange): Record<string, string> {
  const query: Record<string, string> = Object.create(null)
  for (const [k, v] of ex.url.searchParams) {
    if (Object.hasOwn(query, k)) throw new InvalidArgumentError(`${k}: given twice`)
    query[k] = v
  }
  return query
}
