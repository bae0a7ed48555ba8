/**
 * Errors of zaris. Every failure is a {@link ZarisError} with a stable `code`;
 * match on the code (or use {@link isZarisError}), not on `instanceof`, since
 * errors cross realms (tabs, workers) and the wire as `{ code, message }` and
 * are rebuilt on the other side by {@link errorFromJSON}.
 *
 * @module
 */

/** Marks zaris errors across realms, where `instanceof` cannot see them. */
const BRAND = Symbol.for('zaris.error')

/** Every stable error code zaris uses: the one list that {@link ErrorCode} and the docs' error table are checked against. */
export const ERROR_CODES = [
  'INVALID_ARGUMENT',
  'INVALID_URL',
  'UNSUPPORTED',
  'CONFLICT',
  'FENCED',
  'COMPACTED',
  'RELEASED',
  'EXPIRED',
  'STOLEN',
  'LOST',
  'CLOSED',
  'UNAVAILABLE',
  'UNAUTHORIZED',
  'TOO_LARGE',
  'RATE_LIMITED',
  'REVISION_EXHAUSTED',
  'INTERNAL',
] as const

/** Every stable error code zaris uses. */
export type ErrorCode = (typeof ERROR_CODES)[number]

/**
 * The base class of every error zaris throws.
 *
 * @example
 * try { await client.put('', 1) } catch (e) { if (isZarisError(e, 'INVALID_ARGUMENT')) console.log(e.message) }
 */
export class ZarisError extends Error {
  /** A stable, machine-readable code; see {@link ErrorCode}. */
  readonly code: ErrorCode
  readonly [BRAND] = true

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.name = new.target.name
  }

  /** The wire form: what crosses BroadcastChannel and HTTP. */
  toJSON(): { code: ErrorCode; message: string } {
    return { code: this.code, message: this.message }
  }
}

/**
 * Bad input at a call: an empty key, a ttl that is not a positive finite
 * number, a value that cannot be stored. The message names the argument.
 *
 * @example
 * await client.put('k', () => 1) // throws InvalidArgumentError: value: a function cannot be stored
 */
export class InvalidArgumentError extends ZarisError {
  constructor(message: string) {
    super('INVALID_ARGUMENT', message)
  }
}

/**
 * A connection string that is malformed or names a scheme nobody registered.
 *
 * @example
 * await connect('ftp://x') // throws InvalidUrlError
 */
export class InvalidUrlError extends ZarisError {
  constructor(message: string) {
    super('INVALID_URL', message)
  }
}

/**
 * The operation cannot work here, for example `zaris://idb/...` in Node.
 *
 * @example
 * isZarisError(err, 'UNSUPPORTED')
 */
export class UnsupportedError extends ZarisError {
  constructor(message: string) {
    super('UNSUPPORTED', message)
  }
}

/**
 * An `ifRevision` condition did not hold: someone else changed the key first.
 *
 * @example
 * await client.put('k', 2, { ifRevision: 7 }) // throws ConflictError when k is no longer at revision 7
 */
export class ConflictError extends ZarisError {
  constructor(message: string) {
    super('CONFLICT', message)
  }
}

/**
 * A fenced write was refused because the lock it was fenced by is no longer
 * held with that token. Nothing was written.
 *
 * @example
 * await client.put('report', 'done', { fence: lock }) // throws FencedError once the lock was lost
 */
export class FencedError extends ZarisError {
  constructor(message: string) {
    super('FENCED', message)
  }
}

/**
 * A watch asked for history older than the store still keeps. Start over
 * from a fresh read.
 *
 * @example
 * isZarisError(err, 'COMPACTED')
 */
export class CompactedError extends ZarisError {
  constructor(message: string) {
    super('COMPACTED', message)
  }
}

/**
 * Why a hold (lock, lease, leadership) ended: the `reason` of its `signal`.
 * `code` is `RELEASED`, `EXPIRED`, `STOLEN`, `LOST` or `CLOSED`.
 *
 * @example
 * lock.signal.addEventListener('abort', () => console.log((lock.signal.reason as HoldEndedError).code))
 */
export class HoldEndedError extends ZarisError {
  constructor(code: 'RELEASED' | 'EXPIRED' | 'STOLEN' | 'LOST' | 'CLOSED', message: string) {
    super(code, message)
  }
}

/**
 * The client (or the adapter under it) was closed.
 *
 * @example
 * await client.close(); await client.get('k') // throws ClosedError
 */
export class ClosedError extends ZarisError {
  constructor(message = 'the client is closed') {
    super('CLOSED', message)
  }
}

/**
 * The store could not be reached or did not answer; the operation may or may
 * not have been applied.
 *
 * @example
 * isZarisError(err, 'UNAVAILABLE')
 */
export class UnavailableError extends ZarisError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('UNAVAILABLE', message, options)
  }
}

/**
 * The store refused the credentials (a missing or wrong token).
 *
 * @example
 * await connect('zaris://localhost:7861/demo', { token: 'wrong' }) // operations throw UnauthorizedError
 */
export class UnauthorizedError extends ZarisError {
  constructor(message: string) {
    super('UNAUTHORIZED', message)
  }
}

/**
 * A request or frame was larger than the node accepts (`zaris serve
 * --max-body`, 64 KiB by default), a commit would grow the entries of a
 * node's stores past its budget (`--max-store-bytes`), or etcd refused a
 * transaction as too large. Nothing was applied.
 *
 * @example
 * await client.put('big', 'x'.repeat(100_000)) // through a node: throws TooLargeError
 */
export class TooLargeError extends ZarisError {
  constructor(message: string) {
    super('TOO_LARGE', message)
  }
}

/**
 * The node is at one of its limits (open watch streams, open namespaces) and
 * refused to take on more; retry later or raise the limit.
 *
 * @example
 * isZarisError(err, 'RATE_LIMITED')
 */
export class RateLimitedError extends ZarisError {
  constructor(message: string) {
    super('RATE_LIMITED', message)
  }
}

/**
 * Something failed that the caller could not have caused: a node or store
 * that answered with something zaris does not understand, or a bug. The
 * operation may or may not have been applied.
 *
 * @example
 * isZarisError(err, 'INTERNAL')
 */
export class InternalError extends ZarisError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('INTERNAL', message, options)
  }
}

/**
 * The store has used up its revisions: the next one would pass
 * `Number.MAX_SAFE_INTEGER`, beyond which numbers (and so revisions and
 * fencing tokens) lose their order. The commit wrote nothing; the store
 * still answers reads, but takes no more writes (nor expiries, which need a
 * revision too). Move its data to a new store. At a million commits a
 * second this takes 285 years to reach.
 *
 * @example
 * if (isZarisError(err, 'REVISION_EXHAUSTED')) alertOperator(err.message)
 */
export class RevisionExhaustedError extends ZarisError {
  constructor(message: string) {
    super('REVISION_EXHAUSTED', message)
  }
}

/** The codes that only end a hold; they travel as {@link HoldEndedError}. */
type HoldEndCode = 'RELEASED' | 'EXPIRED' | 'STOLEN' | 'LOST'

/** The class of every other code: a code added to {@link ERROR_CODES} without a class here does not compile. */
const byCode: Record<Exclude<ErrorCode, HoldEndCode>, new (message: string) => ZarisError> = {
  INVALID_ARGUMENT: InvalidArgumentError,
  INVALID_URL: InvalidUrlError,
  UNSUPPORTED: UnsupportedError,
  CONFLICT: ConflictError,
  FENCED: FencedError,
  COMPACTED: CompactedError,
  CLOSED: ClosedError,
  UNAVAILABLE: UnavailableError,
  UNAUTHORIZED: UnauthorizedError,
  TOO_LARGE: TooLargeError,
  RATE_LIMITED: RateLimitedError,
  REVISION_EXHAUSTED: RevisionExhaustedError,
  INTERNAL: InternalError,
}

/**
 * True when `err` is a zaris error (from any realm), optionally with `code`.
 *
 * @example
 * if (isZarisError(err, 'FENCED')) retryWithNewLock()
 */
export function isZarisError(err: unknown, code?: ErrorCode): err is ZarisError {
  if (typeof err !== 'object' || err === null) return false
  const e = err as { [BRAND]?: unknown; code?: unknown }
  return e[BRAND] === true && typeof e.code === 'string' && (code === undefined || e.code === code)
}

/**
 * Rebuilds an error that crossed a realm or the wire as `{ code, message }`.
 *
 * @example
 * throw errorFromJSON(await response.json())
 */
export function errorFromJSON(json: { code: string; message: string }): ZarisError {
  const { code, message } = json
  if (code === 'RELEASED' || code === 'EXPIRED' || code === 'STOLEN' || code === 'LOST') return new HoldEndedError(code, message)
  // A code this version does not know (a newer peer's) is still an error, kept as INTERNAL.
  const Ctor = Object.hasOwn(byCode, code) ? byCode[code as keyof typeof byCode] : InternalError
  return new Ctor(message)
}
