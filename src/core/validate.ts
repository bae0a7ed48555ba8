/**
 * Argument checks shared by every public entry point. Each throws an
 * `InvalidArgumentError` whose message names the argument, at the call,
 * before anything reaches a store.
 *
 * @module
 */
import type { Value } from './adapter'
import { InvalidArgumentError } from './errors'
import { isQueueKey } from './reserved'

/** Keys longer than this are refused: they are names, not payloads. */
export const MAX_KEY_LENGTH = 1024
/** Values nested deeper than this are refused (a guard against runaway recursion). */
export const MAX_VALUE_DEPTH = 64

export function checkKey(key: unknown, name = 'key'): string {
  if (typeof key !== 'string') throw new InvalidArgumentError(`${name} must be a string, got ${describe(key)}`)
  if (key.length === 0) throw new InvalidArgumentError(`${name} must not be empty`)
  if (key.length > MAX_KEY_LENGTH) {
    throw new InvalidArgumentError(`${name} is ${key.length} characters long; the limit is ${MAX_KEY_LENGTH}`)
  }
  return key
}

/** A key given to the public API: {@link checkKey}, and not one of zaris's reserved keys. */
export function checkUserKey(key: unknown, name = 'key'): string {
  checkKey(key, name)
  if (isQueueKey(key as string)) {
    throw new InvalidArgumentError(`${name} must not start with U+0001 "q": zaris keeps those keys for its wait queues`)
  }
  return key as string
}

/** A prefix may be empty (everything). */
export function checkPrefix(prefix: unknown, name = 'prefix'): string {
  if (typeof prefix !== 'string') throw new InvalidArgumentError(`${name} must be a string, got ${describe(prefix)}`)
  if (prefix.length > MAX_KEY_LENGTH) throw new InvalidArgumentError(`${name} is longer than ${MAX_KEY_LENGTH} characters`)
  return prefix
}

/** A duration in milliseconds: a positive finite number. */
export function checkTtl(ttl: unknown, name = 'ttl'): number {
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0) {
    throw new InvalidArgumentError(`${name} must be a positive finite number of milliseconds, got ${describe(ttl)}`)
  }
  // Timers cannot wait longer than 2^31-1 ms; a longer TTL would fire at once.
  if (ttl > 2_147_483_647) throw new InvalidArgumentError(`${name} must be at most 2147483647 ms, got ${ttl}`)
  return ttl
}

/** A wait in milliseconds: zero or more, `Infinity` allowed. */
export function checkWait(wait: unknown, name = 'wait'): number {
  if (typeof wait !== 'number' || Number.isNaN(wait) || wait < 0) {
    throw new InvalidArgumentError(`${name} must be a number of milliseconds >= 0 (or Infinity), got ${describe(wait)}`)
  }
  return wait
}

export function checkRevision(revision: unknown, name: string): number | null {
  if (revision === null) return null
  if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 0) {
    throw new InvalidArgumentError(`${name} must be a revision (an integer >= 0) or null, got ${describe(revision)}`)
  }
  return revision
}

export function checkBoolean(value: unknown, name: string): boolean | undefined {
  if (value === undefined || typeof value === 'boolean') return value
  throw new InvalidArgumentError(`${name} must be a boolean, got ${describe(value)}`)
}

export function checkSignal(signal: unknown, name = 'signal'): AbortSignal | undefined {
  if (signal === undefined) return undefined
  if (typeof signal === 'object' && signal !== null && 'aborted' in signal && 'addEventListener' in signal) {
    return signal as AbortSignal
  }
  throw new InvalidArgumentError(`${name} must be an AbortSignal, got ${describe(signal)}`)
}

export function checkOptions<T extends object>(options: unknown, name = 'options'): Partial<T> {
  if (options === undefined) return {}
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError(`${name} must be an object, got ${describe(options)}`)
  }
  return options as Partial<T>
}

/**
 * Throws unless `value` can be stored: JSON data — strings, finite numbers,
 * booleans, null, arrays and plain objects — without cycles.
 */
export function checkValue(value: unknown, name = 'value'): Value {
  walk(value, name, 0, new Set())
  return value as Value
}

function walk(value: unknown, path: string, depth: number, seen: Set<object>): void {
  if (depth > MAX_VALUE_DEPTH) throw new InvalidArgumentError(`${path}: nested deeper than ${MAX_VALUE_DEPTH} levels`)
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return
    case 'number':
      if (!Number.isFinite(value)) throw new InvalidArgumentError(`${path}: ${value} cannot be stored (not a finite number)`)
      return
    case 'object':
      break
    default:
      throw new InvalidArgumentError(`${path}: ${describe(value)} cannot be stored (only JSON data can)`)
  }
  if (value === null) return
  if (seen.has(value)) throw new InvalidArgumentError(`${path}: a cycle cannot be stored`)
  seen.add(value)
  if (Array.isArray(value)) {
    value.forEach((item, i) => walk(item, `${path}[${i}]`, depth + 1, seen))
  } else {
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) {
      throw new InvalidArgumentError(`${path}: ${describe(value)} cannot be stored (only plain objects and arrays)`)
    }
    for (const k of Object.keys(value)) walk((value as Record<string, unknown>)[k], `${path}.${k}`, depth + 1, seen)
  }
  seen.delete(value)
}

export function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'function') return 'a function'
  if (typeof value === 'object') return `an object (${value.constructor?.name ?? 'no prototype'})`
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)
  return `${typeof value} ${String(value)}`
}

/** The options of an adapter's `list`, checked: `after` a string (a key), `limit` an integer >= 1. */
export function checkListOptions(options: unknown): { after: string | undefined; limit: number | undefined } {
  const o = checkOptions<{ after?: unknown; limit?: unknown }>(options, 'list options')
  if (o.after !== undefined && (typeof o.after !== 'string' || o.after.length > MAX_KEY_LENGTH)) {
    throw new InvalidArgumentError(`after must be a key (a string of at most ${MAX_KEY_LENGTH} characters), got ${describe(o.after)}`)
  }
  if (o.limit !== undefined && (typeof o.limit !== 'number' || !Number.isSafeInteger(o.limit) || o.limit < 1)) {
    throw new InvalidArgumentError(`limit must be an integer >= 1, got ${describe(o.limit)}`)
  }
  return { after: o.after as string | undefined, limit: o.limit as number | undefined }
}
