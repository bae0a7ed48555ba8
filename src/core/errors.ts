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

/** Every stable error code zaris uses. */
export type ErrorCode =
  | 'INVALID_ARGUMENT'
  | 'INVALID_URL'
  | 'UNSUPPORTED'
  | 'CONFLICT'
  | 'FENCED'
  | 'COMPACTED'
  | 'RELEASED'
  | 'EXPIRED'
  | 'STOLEN'
  | 'LOST'
  | 'CLOSED'
  | 'UNAVAILABLE'
  | 'UNAUTHORIZED'
  | 'TOO_LARGE'
  | 'RATE_LIMITED'
  | 'REVISION_EXHAUSTED'
  | 'INTERNAL'

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

const byCode: Partial<Record<ErrorCode, new (message: string) => ZarisError>> = {
  INVALID_ARGUMENT: InvalidArgumentError,
  INVALID_URL: InvalidUrlError,
  UNSUPPORTED: UnsupportedError,
  CONFLICT: ConflictError,
  FENCED: FencedError,
  COMPACTED: CompactedError,
  CLOSED: ClosedError,
  UNAVAILABLE: UnavailableError,
  UNAUTHORIZED: UnauthorizedError,
  REVISION_EXHAUSTED: RevisionExhaustedError,
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
  const code = json.code as ErrorCode
  if (code === 'RELEASED' || code === 'EXPIRED' || code === 'STOLEN' || code === 'LOST') {
    return new HoldEndedError(code, json.message)
  }
  const Ctor = byCode[code]
  return Ctor ? new Ctor(json.message) : new ZarisError(isKnownCode(code) ? code : 'INTERNAL', json.message)
}

const knownCodes: ReadonlySet<string> = new Set<ErrorCode>([
  'INVALID_ARGUMENT', 'INVALID_URL', 'UNSUPPORTED', 'CONFLICT', 'FENCED', 'COMPACTED', 'RELEASED',
  'EXPIRED', 'STOLEN', 'LOST', 'CLOSED', 'UNAVAILABLE', 'UNAUTHORIZED', 'TOO_LARGE', 'RATE_LIMITED', 'REVISION_EXHAUSTED',
  'INTERNAL',
])

function isKnownCode(code: string): code is ErrorCode {
  return knownCodes.has(code)
}
