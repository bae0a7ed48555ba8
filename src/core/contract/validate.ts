/**
 * Argument checks shared by every public entry point. Each throws an
 * `InvalidArgumentError` whose message names the argument, at the call,
 * before anything reaches a store.
 *
 * @module
 */
import type { Check, CommitOptions, Op, Value, WatchSink } from './adapter'
import { InvalidArgumentError } from './errors'
import { MAX_KEY_LENGTH, MAX_OR_ELSE, MAX_OWNER_LENGTH, MAX_REQUEST_ID_LENGTH, MAX_TTL, MAX_VALUE_DEPTH } from './limits'
import { isReservedKey } from './reserved'

// The limits these checks enforce, for modules that import them with the checks.
export { MAX_KEY_LENGTH, MAX_OWNER_LENGTH, MAX_TTL, MAX_VALUE_DEPTH }

/**
 * Whether `s` is well-formed UTF-16 (no lone surrogate): what every store can
 * keep unchanged. Every platform zaris runs on has `isWellFormed` (Node 20;
 * browsers with `AbortSignal.any`, which zaris needs, got it earlier).
 */
export function isWellFormed(s: string): boolean {
  return s.isWellFormed()
}

/**
 * The one key rule of zaris, for every store and the wire: why `s` cannot be
 * a key (or, with `prefix`, a prefix), or `undefined` when it can. A key is
 * well-formed UTF-16 of 1 to {@link MAX_KEY_LENGTH} code units (`s.length`);
 * a prefix may also be empty. A lone surrogate is refused because UTF-8
 * stores (SQLite, Redis) would keep U+FFFD instead, a different key.
 */
export function keyProblem(s: string, prefix = false): string | undefined {
  if (s.length === 0 && !prefix) return 'must not be empty'
  if (s.length > MAX_KEY_LENGTH) return `is ${s.length} UTF-16 code units long; the limit is ${MAX_KEY_LENGTH}`
  if (!isWellFormed(s)) return 'contains a lone surrogate (it is not well-formed UTF-16), which a store could not keep unchanged'
  return undefined
}

/**
 * Returns `key` if it is a key by the one key rule (well-formed UTF-16, 1 to
 * 1024 code units), else throws an `InvalidArgumentError` naming `name`.
 * Every store checks keys so, even when called directly.
 *
 * @example
 * const key = checkKey(input) // in an adapter's get
 */
export function checkKey(key: unknown, name = 'key'): string {
  if (typeof key !== 'string') throw new InvalidArgumentError(`${name} must be a string, got ${describe(key)}`)
  const problem = keyProblem(key)
  if (problem) throw new InvalidArgumentError(`${name} ${problem}`)
  return key
}

/** A key given to the public API: {@link checkKey}, and not one of zaris's reserved keys. */
export function checkUserKey(key: unknown, name = 'key'): string {
  checkKey(key, name)
  if (isReservedKey(key as string)) {
    throw new InvalidArgumentError(`${name} must not start with U+0001: zaris keeps those keys for its wait lines, shared holds and permits`)
  }
  return key as string
}

/**
 * Returns `prefix` if it is one: the key rule, except that it may be empty
 * (everything); else throws an `InvalidArgumentError` naming `name`.
 *
 * @example
 * checkPrefix('lock:') // in an adapter's list and watch
 */
export function checkPrefix(prefix: unknown, name = 'prefix'): string {
  if (typeof prefix !== 'string') throw new InvalidArgumentError(`${name} must be a string, got ${describe(prefix)}`)
  const problem = keyProblem(prefix, true)
  if (problem) throw new InvalidArgumentError(`${name} ${problem}`)
  return prefix
}

/**
 * Checks a commit's arguments as every store must, whoever calls it: arrays
 * of checks and ops of the contract's shapes, keys by the key rule, no key
 * in two ops. Scalar checks only: values are checked where they come in
 * (the client, the node). Throws `InvalidArgumentError` naming the field.
 *
 * @example
 * checkCommitArgs([{ key: 'k', revision: null }], [{ type: 'add', key: 'k', delta: 1 }])
 */
export function checkCommitArgs(checks: unknown, ops: unknown): asserts checks is Check[] {
  if (!Array.isArray(checks)) throw new InvalidArgumentError(`checks must be an array, got ${describe(checks)}`)
  if (!Array.isArray(ops)) throw new InvalidArgumentError(`ops must be an array, got ${describe(ops)}`)
  for (let i = 0; i < checks.length; i++) checkCheck(checks[i], i)
  // Most commits (a lock's acquire, release, renewal) have one op: no set needed to find a repeated key.
  const seen = ops.length > 1 ? new Set<string>() : undefined
  for (let i = 0; i < ops.length; i++) {
    const key = checkOp(ops[i], i)
    if (seen) {
      if (seen.has(key)) throw new InvalidArgumentError(`ops: key ${JSON.stringify(key)} appears twice in one commit`)
      seen.add(key)
    }
  }
}

/**
 * Checks a commit's `orElse` (see `CommitOptions.orElse`): at most
 * {@link MAX_OR_ELSE} other commits, each as {@link checkCommitArgs} wants.
 *
 * @example
 * checkOrElse([{ checks: [{ key: 's1', revision: null }], ops: [{ type: 'set', key: 's1', value: 1 }] }])
 */
export function checkOrElse(orElse: unknown): void {
  if (orElse === undefined) return
  if (!Array.isArray(orElse) || orElse.length > MAX_OR_ELSE) throw new InvalidArgumentError(`orElse must be an array of at most ${MAX_OR_ELSE} commits, got ${describe(orElse)}`)
  orElse.forEach((c: unknown, i) => {
    if (typeof c !== 'object' || c === null) throw new InvalidArgumentError(`orElse[${i}] must be an object with checks and ops`)
    const { checks, ops } = c as { checks?: unknown; ops?: unknown }
    checkCommitArgs(checks, ops)
  })
}

/** The key rule as a test, for hot paths that name the argument only when it fails. */
function isKey(key: unknown): key is string {
  return typeof key === 'string' && key.length > 0 && key.length <= MAX_KEY_LENGTH && isWellFormed(key)
}

// Every commit runs these: field names are built only for a message, never on the way through.
function checkCheck(check: unknown, i: number): void {
  if (typeof check !== 'object' || check === null) throw new InvalidArgumentError(`checks[${i}] must be an object with key and revision or created`)
  const c = check as Record<string, unknown>
  if (!isKey(c.key)) checkKey(c.key, `checks[${i}].key`)
  const byRevision = 'revision' in c
  if (byRevision === 'created' in c) throw new InvalidArgumentError(`checks[${i}] must have exactly one of revision and created`)
  const want = byRevision ? c.revision : c.created
  if (want !== null && (typeof want !== 'number' || !Number.isSafeInteger(want) || want < 0)) {
    throw new InvalidArgumentError(`checks[${i}].${byRevision ? 'revision' : 'created'} must be an integer >= 0 or null, got ${describe(want)}`)
  }
}

/** Checks op `i` and returns its key. */
function checkOp(op: unknown, i: number): string {
  if (typeof op !== 'object' || op === null) throw new InvalidArgumentError(`ops[${i}] must be an object`)
  const o = op as Partial<Record<string, unknown>> & Op
  const key = isKey(o.key) ? o.key : checkKey(o.key, `ops[${i}].key`)
  switch (o.type) {
    case 'delete':
      return key
    case 'add':
      if (!Number.isSafeInteger(o.delta)) throw new InvalidArgumentError(`ops[${i}].delta must be a safe integer, got ${describe(o.delta)}`)
      return key
    case 'set':
      if (!('value' in o)) throw new InvalidArgumentError(`ops[${i}].value is missing`)
      if (o.ttl !== undefined && !(typeof o.ttl === 'number' && o.ttl > 0 && o.ttl <= MAX_TTL)) checkTtl(o.ttl, `ops[${i}].ttl`)
      if (o.owner !== undefined && !isOwnerId(o.owner)) checkOwner(o.owner, `ops[${i}].owner`)
      if (o.fresh !== undefined && typeof o.fresh !== 'boolean') throw new InvalidArgumentError(`ops[${i}].fresh must be a boolean, got ${describe(o.fresh)}`)
      return key
    default:
      throw new InvalidArgumentError(`ops[${i}].type must be 'set', 'delete' or 'add', got ${describe((o as { type?: unknown }).type)}`)
  }
}

/** Whether `owner` can be an owner (a client id): a non-empty well-formed string of at most {@link MAX_OWNER_LENGTH} UTF-16 code units. */
export function isOwnerId(owner: unknown): owner is string {
  return typeof owner === 'string' && owner.length > 0 && owner.length <= MAX_OWNER_LENGTH && isWellFormed(owner)
}

/** Throws unless `owner` is an owner id ({@link isOwnerId}). */
export function checkOwner(owner: unknown, name = 'owner'): string {
  if (!isOwnerId(owner)) {
    throw new InvalidArgumentError(`${name} must be a non-empty, well-formed string of at most ${MAX_OWNER_LENGTH} UTF-16 code units, got ${describe(owner)}`)
  }
  return owner
}

/** A duration in milliseconds: a positive finite number. */
export function checkTtl(ttl: unknown, name = 'ttl'): number {
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0) {
    throw new InvalidArgumentError(`${name} must be a positive finite number of milliseconds, got ${describe(ttl)}`)
  }
  // Timers cannot wait longer than 2^31-1 ms; a longer TTL would fire at once.
  if (ttl > MAX_TTL) throw new InvalidArgumentError(`${name} must be at most ${MAX_TTL} ms, got ${ttl}`)
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

/** `depth`: how many arrays and objects hold `value`; each array or object is a level, and 64 is the most. */
function walk(value: unknown, path: string, depth: number, seen: Set<object>): void {
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
  // Counted at the array or object itself, so an empty one past the limit is refused too.
  if (depth >= MAX_VALUE_DEPTH) throw new InvalidArgumentError(`${path}: nested deeper than ${MAX_VALUE_DEPTH} levels`)
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

/**
 * Checks the options of an adapter's `list` as every store must: `after` a
 * key by the key rule, `limit` an integer >= 1 (both optional). Throws
 * `InvalidArgumentError` naming the field.
 *
 * @example
 * const { after, limit } = checkListOptions(options) // in an adapter's list
 */
export function checkListOptions(options: unknown): { after: string | undefined; limit: number | undefined } {
  const o = checkOptions<{ after?: unknown; limit?: unknown }>(options, 'list options')
  if (o.after !== undefined) checkKey(o.after, 'after')
  if (o.limit !== undefined && (typeof o.limit !== 'number' || !Number.isSafeInteger(o.limit) || o.limit < 1)) {
    throw new InvalidArgumentError(`limit must be an integer >= 1, got ${describe(o.limit)}`)
  }
  return { after: o.after as string | undefined, limit: o.limit as number | undefined }
}

/**
 * Checks a watch's arguments as every store must: a prefix by the key rule
 * (or empty), a sink with `event` and `error`, a `fromRevision` that is a
 * revision. Throws `InvalidArgumentError` naming the field.
 *
 * @example
 * checkWatchArgs('lock:', sink, undefined)
 */
export function checkWatchArgs(prefix: unknown, sink: unknown, fromRevision: unknown): asserts sink is WatchSink {
  checkPrefix(prefix)
  const s = sink as Partial<WatchSink> | null
  if (typeof s !== 'object' || s === null || typeof s.event !== 'function' || typeof s.error !== 'function') {
    throw new InvalidArgumentError('sink must be an object with event and error functions')
  }
  if (fromRevision !== undefined && (!Number.isSafeInteger(fromRevision) || (fromRevision as number) < 0)) {
    throw new InvalidArgumentError(`fromRevision must be an integer >= 0, got ${describe(fromRevision)}`)
  }
}

/**
 * Checks a commit's request id, as a store given one directly takes it: a
 * string of 1 to {@link MAX_REQUEST_ID_LENGTH} characters.
 *
 * @example
 * const requestId = checkRequestId(options?.requestId) // undefined when none was given
 */
export function checkRequestId(requestId: unknown): string | undefined {
  if (requestId !== undefined && (typeof requestId !== 'string' || requestId.length === 0 || requestId.length > MAX_REQUEST_ID_LENGTH)) {
    throw new InvalidArgumentError(`requestId must be a non-empty string of at most ${MAX_REQUEST_ID_LENGTH} characters`)
  }
  return requestId
}

/**
 * Checks a commit's options as a store takes them, whoever calls it:
 * `requestId` (see {@link checkRequestId}), `seen` a revision (an integer
 * >= 0), `waitChange` a number of ms >= 0. Returns them; throws
 * `InvalidArgumentError` naming the field.
 *
 * @example
 * const { requestId, seen } = checkCommitOptions(options) // in an adapter's commit
 */
export function checkCommitOptions(options: unknown): CommitOptions {
  const o = checkOptions<CommitOptions>(options, 'commit options')
  const out: CommitOptions = {}
  if (o.requestId !== undefined) out.requestId = checkRequestId(o.requestId)!
  if (o.seen !== undefined) {
    if (!Number.isSafeInteger(o.seen) || o.seen < 0) throw new InvalidArgumentError(`seen must be a revision (an integer >= 0), got ${describe(o.seen)}`)
    out.seen = o.seen
  }
  if (o.waitChange !== undefined) out.waitChange = checkWait(o.waitChange, 'waitChange')
  return out
}
