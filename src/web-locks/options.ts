/**
 * The arguments of `request()`, checked as the Web Locks API checks them:
 * a `TypeError` where its bindings would throw one (no callback, an
 * unknown mode, a signal that is not an `AbortSignal`), a
 * `NotSupportedError` `DOMException` where the specification names one —
 * and zaris's own `InvalidArgumentError` for what only zaris refuses (a
 * name too long for a zaris key once encoded, a bad TTL).
 *
 * @module
 */
import { InvalidArgumentError } from '../core/contract/errors'
import type { LockMode } from '../core/locks'
import { checkBoolean, checkTtl, MAX_KEY_LENGTH } from '../core/contract/validate'
import { encodeName } from './names'
import type { WebLock } from './lock'

/**
 * zaris's own options of a request, kept under the `zaris` key so that no
 * option the Web Locks specification adds later can clash with them.
 */
export interface ZarisRequestOptions {
  /** Milliseconds the lock lives without renewal. Default: the client's `ttl` (30 000). */
  ttl?: number
  /**
   * Renew the lock at a third of its TTL while the callback runs. Default
   * `true`. With `false` the lock ends at its TTL even if the callback still
   * runs (a time limit on the holder): the request then rejects.
   */
  autoRenew?: boolean
}

/** The options of `request()`: the specification's, and zaris's under `zaris`. */
export interface WebLockOptions {
  /** `'exclusive'` (default): the only holder. `'shared'`: one of any number of shared holders. */
  mode?: LockMode
  /** Grant only if it can be granted at once; else the callback is called with `null`. */
  ifAvailable?: boolean
  /** Take the lock from whoever holds it, ahead of every waiter; the holders' requests reject with an `AbortError`. */
  steal?: boolean
  /** Aborts the request while it waits; it then rejects with the signal's reason. */
  signal?: AbortSignal
  /** zaris's own options. */
  zaris?: ZarisRequestOptions
}

/** What `request()` calls: with the lock once granted, or with `null` (`ifAvailable`, not available). */
export type LockGrantedCallback<T> = (lock: WebLock | null) => T | PromiseLike<T>

/** A request, checked. */
export interface Parsed {
  name: string
  /** The zaris key: the manager's prefix and the name, encoded (names.ts). */
  key: string
  mode: LockMode
  ifAvailable: boolean
  steal: boolean
  signal: AbortSignal | undefined
  ttl: number | undefined
  autoRenew: boolean
  callback: LockGrantedCallback<unknown>
}

/** Checks the arguments of `request(name, callback)` or `request(name, options, callback)`. */
export function parseRequest(args: readonly unknown[], prefix: string): Parsed {
  if (args.length < 2) throw new TypeError(`request needs a name and a callback, got ${args.length} argument${args.length === 1 ? '' : 's'}`)
  const name = domString(args[0], 'name')
  const options = dictionary(args.length === 2 ? undefined : args[1])
  const callback = args.length === 2 ? args[1] : args[2]
  const mode = lockMode(options.mode)
  const ifAvailable = Boolean(options.ifAvailable)
  const steal = Boolean(options.steal)
  const signal = abortSignal(options.signal)
  const zaris = zarisOptions(options.zaris)
  if (typeof callback !== 'function') throw new TypeError(`request's callback must be a function, got ${describe(callback)}`)
  // The specification's refusals, in its order.
  if (name.startsWith('-')) throw notSupported(`lock names starting with "-" are reserved, got ${JSON.stringify(name)}`)
  if (steal && ifAvailable) throw notSupported("the 'steal' and 'ifAvailable' options cannot be used together")
  if (steal && mode !== 'exclusive') throw notSupported("the 'steal' option needs mode 'exclusive'")
  if (signal && (steal || ifAvailable)) throw notSupported(`the 'signal' option cannot be used with '${steal ? 'steal' : 'ifAvailable'}'`)
  const body = encodeName(name)
  const key = prefix + body
  if (key.length > MAX_KEY_LENGTH) {
    const how = body === name ? '' : ' once encoded (docs/web-locks.md, "Names")'
    throw new InvalidArgumentError(`the lock name is ${key.length} UTF-16 code units long${how}${prefix ? ` with its prefix ${JSON.stringify(prefix)}` : ''}; a zaris key holds ${MAX_KEY_LENGTH}`)
  }
  return { name, key, mode, ifAvailable, steal, signal, ttl: zaris.ttl, autoRenew: zaris.autoRenew, callback: callback as LockGrantedCallback<unknown> }
}

/** A `NotSupportedError` `DOMException`, as the specification throws. */
export function notSupported(message: string): DOMException {
  return new DOMException(message, 'NotSupportedError')
}

function domString(value: unknown, what: string): string {
  if (typeof value === 'symbol') throw new TypeError(`${what} must be a string, got a symbol`)
  return String(value)
}

/** A WebIDL dictionary: `undefined` and `null` are empty, any other non-object is refused. */
function dictionary(value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' && typeof value !== 'function') throw new TypeError(`request's options must be an object, got ${describe(value)}`)
  return value as Record<string, unknown>
}

function lockMode(value: unknown): LockMode {
  if (value === undefined) return 'exclusive'
  const mode = domString(value, 'mode')
  if (mode === 'exclusive' || mode === 'shared') return mode
  throw new TypeError(`mode must be 'exclusive' or 'shared', got ${JSON.stringify(mode)}`)
}

function abortSignal(value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined
  // By its brand, not instanceof: a signal from another realm (a frame) is one too.
  if (Object.prototype.toString.call(value) === '[object AbortSignal]') return value as AbortSignal
  throw new TypeError(`signal must be an AbortSignal, got ${describe(value)}`)
}

function zarisOptions(value: unknown): { ttl: number | undefined; autoRenew: boolean } {
  if (value === undefined) return { ttl: undefined, autoRenew: true }
  if (typeof value !== 'object' || value === null) throw new InvalidArgumentError(`options.zaris must be an object, got ${describe(value)}`)
  const o = value as ZarisRequestOptions
  return {
    ttl: o.ttl === undefined ? undefined : checkTtl(o.ttl, 'options.zaris.ttl'),
    autoRenew: checkBoolean(o.autoRenew, 'options.zaris.autoRenew') ?? true,
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value === 'function') return 'a function'
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object'
  if (typeof value === 'string') return JSON.stringify(value)
  return `${typeof value} ${String(value)}`
}
