/**
 * Hand-written checks for the shapes that cross the wire on every lock
 * operation (get, list and commit requests; get and commit answers), which
 * the protocol's `parseWith` tries before zod. Each accepts only what its
 * schema accepts and then returns what the schema would (the input itself:
 * no transform changes these shapes), or undefined for anything else, which
 * then goes to zod, so the error messages stay zod's. They assume
 * JSON-parsed input, as everything parseWith sees is.
 * test/http/protocol-fast.test.ts checks them against the schemas on
 * generated inputs, valid and not.
 *
 * @module
 */
import { isOwnerId as isOwner, isWellFormed, MAX_KEY_LENGTH, MAX_TTL } from '../../core/contract/validate'
import { MAX_OR_ELSE } from '../../core/contract/limits'

/** Most checks, and most ops, in one commit on the wire (the protocol's schemas use it too). */
export const MAX_OPS = 1_000

type Obj = Record<string, unknown>
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype
const isKey = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= MAX_KEY_LENGTH && isWellFormed(v)
const isPrefix = (v: unknown): v is string => typeof v === 'string' && v.length <= MAX_KEY_LENGTH && isWellFormed(v)
const isRevision = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
const REQUEST_ID = /^[A-Za-z0-9_-]{8,128}$/
const STREAM_ID = /^[A-Za-z0-9_-]{1,64}$/
const KEY_ONLY = { key: 1 } as const

/** Every own key of `o` is one of `allowed`, and the `required` ones are there. */
function keysWithin(o: Obj, allowed: Readonly<Record<string, 1>>, required: number): boolean {
  let n = 0
  for (const k in o) {
    if (!Object.hasOwn(o, k) || allowed[k] !== 1 || k === '__proto__') return false
    n++
  }
  return n >= required
}

/** What checkValue accepts, without building a path per node (values only, no message). */
function storable(v: unknown, depth: number): boolean {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true
    case 'number':
      return Number.isFinite(v)
    case 'object':
      break
    default:
      return false
  }
  if (v === null) return true
  // checkValue refuses deeper values, and shared references; neither comes out of JSON.parse, but say no and let it judge.
  if (depth >= MAX_VALUE_DEPTH_FAST) return false
  if (Array.isArray(v)) {
    for (const x of v) if (!storable(x, depth + 1)) return false
    return true
  }
  const proto = Object.getPrototypeOf(v)
  if (proto !== Object.prototype && proto !== null) return false
  for (const k of Object.keys(v)) if (!storable((v as Obj)[k], depth + 1)) return false
  return true
}
/** Below checkValue's own limit (64): anything near it goes to the full check. */
const MAX_VALUE_DEPTH_FAST = 32

const CHECK_KEYS = { key: 1, revision: 1, created: 1 } as const
const SET_KEYS = { type: 1, key: 1, value: 1, ttl: 1, owner: 1, fresh: 1 } as const
const DELETE_KEYS = { type: 1, key: 1 } as const
const ADD_KEYS = { type: 1, key: 1, delta: 1 } as const
const COMMIT_KEYS = { checks: 1, ops: 1, requestId: 1, seen: 1, waitChange: 1, keepParked: 1, parkOrder: 1, wakeOwner: 1, answerOn: 1, orElse: 1 } as const
const WAY_KEYS = { checks: 1, ops: 1 } as const
/** The longest `waitChange` the wire carries (a day); a node cuts it to its own bound. */
export const WAIT_CHANGE_MAX = 86_400_000

function fastCheck(c: unknown): boolean {
  if (!isObject(c) || !keysWithin(c, CHECK_KEYS, 2) || !isKey(c.key)) return false
  const hasRevision = Object.hasOwn(c, 'revision')
  if (hasRevision === Object.hasOwn(c, 'created')) return false
  const r = hasRevision ? c.revision : c.created
  return r === null || isRevision(r)
}

function fastOp(o: unknown): boolean {
  if (!isObject(o) || !isKey(o.key)) return false
  if (o.type === 'delete') return keysWithin(o, DELETE_KEYS, 2)
  if (o.type === 'add') return keysWithin(o, ADD_KEYS, 3) && Number.isSafeInteger(o.delta)
  if (o.type !== 'set' || !keysWithin(o, SET_KEYS, 3) || !Object.hasOwn(o, 'value') || !storable(o.value, 0)) return false
  if (o.ttl !== undefined && !(typeof o.ttl === 'number' && o.ttl > 0 && o.ttl <= MAX_TTL)) return false
  if (o.owner !== undefined && !isOwner(o.owner)) return false
  return o.fresh === undefined || typeof o.fresh === 'boolean'
}

/** Checks and ops, each an array of at most MAX_OPS well-formed ones (a commit's, or one of its other ways'). */
function fastWay(checks: unknown, ops: unknown): boolean {
  if (!Array.isArray(checks) || !Array.isArray(ops) || checks.length > MAX_OPS || ops.length > MAX_OPS) return false
  for (const c of checks) if (!fastCheck(c)) return false
  for (const o of ops) if (!fastOp(o)) return false
  return true
}

export function fastCommitRequest(b: unknown): Obj | undefined {
  if (!isObject(b) || !keysWithin(b, COMMIT_KEYS, 2)) return undefined
  const { checks, ops, requestId, seen, waitChange, keepParked, parkOrder, wakeOwner, answerOn, orElse } = b
  if (!fastWay(checks, ops)) return undefined
  if (orElse !== undefined && !(Array.isArray(orElse) && orElse.length <= MAX_OR_ELSE && orElse.every((w) => isObject(w) && keysWithin(w, WAY_KEYS, 2) && fastWay(w.checks, w.ops)))) return undefined
  if (seen !== undefined && !isRevision(seen)) return undefined
  if (waitChange !== undefined && !(Number.isSafeInteger(waitChange) && (waitChange as number) >= 0 && (waitChange as number) <= WAIT_CHANGE_MAX)) return undefined
  if (keepParked !== undefined && typeof keepParked !== 'boolean') return undefined
  if (parkOrder !== undefined && !isRevision(parkOrder)) return undefined
  if (wakeOwner !== undefined && !isOwner(wakeOwner)) return undefined
  if (answerOn !== undefined && !(typeof answerOn === 'string' && STREAM_ID.test(answerOn))) return undefined
  if (requestId !== undefined && !(typeof requestId === 'string' && REQUEST_ID.test(requestId))) return undefined
  return b
}

const LIST_KEYS = { prefix: 1, after: 1, limit: 1 } as const

export function fastListRequest(b: unknown): Obj | undefined {
  if (!isObject(b) || !keysWithin(b, LIST_KEYS, 1) || !isPrefix(b.prefix)) return undefined
  if (b.after !== undefined && !isKey(b.after)) return undefined
  if (b.limit !== undefined && !(typeof b.limit === 'number' && Number.isSafeInteger(b.limit) && b.limit >= 1)) return undefined
  return b
}

const ENTRY_KEYS = { key: 1, value: 1, revision: 1, created: 1, owner: 1, ttl: 1 } as const

function fastEntry(e: unknown): boolean {
  if (!isObject(e) || !keysWithin(e, ENTRY_KEYS, 4) || !isKey(e.key) || !isRevision(e.revision) || !isRevision(e.created)) return false
  if (!Object.hasOwn(e, 'value') || !storable(e.value, 0)) return false
  if (e.owner !== undefined && !isOwner(e.owner)) return false
  return e.ttl === undefined || (typeof e.ttl === 'number' && e.ttl >= 0 && Number.isFinite(e.ttl))
}

const OK_KEYS = { ok: 1, revision: 1, entries: 1, deleted: 1 } as const
const FAILED_KEYS = { ok: 1, failed: 1 } as const
const FAILURE_KEYS = { key: 1, entry: 1 } as const

export function fastCommitResponse(r: unknown): Obj | undefined {
  if (!isObject(r)) return undefined
  if (r.ok === true) {
    if (!keysWithin(r, OK_KEYS, 4) || !isRevision(r.revision) || !Array.isArray(r.entries) || !Array.isArray(r.deleted)) return undefined
    for (const e of r.entries) if (!fastEntry(e)) return undefined
    for (const k of r.deleted) if (!isKey(k)) return undefined
    return r
  }
  if (r.ok !== false || !keysWithin(r, FAILED_KEYS, 2) || !Array.isArray(r.failed)) return undefined
  for (const f of r.failed) {
    if (!isObject(f) || !keysWithin(f, FAILURE_KEYS, 2) || !isKey(f.key) || !(f.entry === null || fastEntry(f.entry))) return undefined
  }
  return r
}

/** The get request's check. */
export function fastGetRequest(b: unknown): Obj | undefined {
  return isObject(b) && keysWithin(b, KEY_ONLY, 1) && isKey(b.key) ? b : undefined
}

/** The get answer's check. */
export function fastGetResponse(r: unknown): Obj | undefined {
  return isObject(r) && keysWithin(r, { entry: 1 }, 1) && (r.entry === null || fastEntry(r.entry)) ? r : undefined
}
