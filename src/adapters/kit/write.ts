/**
 * Entries as the stores that compute them in JavaScript keep them (the local
 * store of memory and SQLite, IndexedDB): what one op of a commit makes of
 * its key — the new-life rule and the `add` op in one place, so the stores
 * cannot drift apart — and what a read hands out. The Redis adapter does the
 * same in Lua (`redis/scripts.ts`).
 *
 * @module
 */
import { SEEN_REVISION_LIMIT, type Entry, type Op, type Value } from '../../core/contract/adapter'
import { InvalidArgumentError, RevisionExhaustedError } from '../../core/contract/errors'
import { describe } from '../../core/contract/validate'

/** An entry as a store keeps it: the contract's entry with its deadline on the store's clock. */
export interface Stored {
  key: string
  value: Value
  revision: number
  created: number
  owner?: string
  /** The TTL it was last written with. */
  ttl?: number
  /** When it expires, on the store's clock. */
  expiresAt?: number
}

/** Stored values are copies, so a caller mutating its object (or an event's) cannot change the store. */
export function copyValue(value: Value): Value {
  return typeof value === 'object' && value !== null ? structuredClone(value) : value
}

/** True when `e` has expired at `now` (on the store's clock). */
export function expired(e: Stored, now: number): boolean {
  return e.expiresAt !== undefined && e.expiresAt <= now
}

/** The entry as a read returns it at store time `now`: `ttl` is the time left; `copy` copies the value. */
export function toEntry(e: Stored, now: number, copy: (value: Value) => Value = (v) => v): Entry {
  const entry: Entry = { key: e.key, value: copy(e.value), revision: e.revision, created: e.created }
  if (e.owner !== undefined) entry.owner = e.owner
  if (e.expiresAt !== undefined) entry.ttl = Math.max(0, e.expiresAt - now)
  return entry
}

/**
 * The entry a `set` or `add` writes over `existing` (the key's live entry, or
 * undefined) in the commit of `revision` at store time `now`. A `set` keeps
 * `created` only over a live entry of the same owner and without `fresh`; an
 * `add` keeps everything but the value and the revision. Throws
 * `InvalidArgumentError` naming the key for an `add` over a non-number or
 * past the safe-integer range. `copy` copies a set's value (stores keep
 * their own copy).
 */
export function written(
  op: Exclude<Op, { type: 'delete' }>,
  existing: Stored | undefined,
  revision: number,
  now: number,
  copy: (value: Value) => Value = (v) => v,
): Stored {
  return op.type === 'add' ? counted(op, existing, revision) : setWritten(op, existing, revision, now, copy)
}

/** The entry an `add` writes over `existing`: see {@link written}. */
export function counted(op: Extract<Op, { type: 'add' }>, existing: Stored | undefined, revision: number): Stored {
  const value = added(op.key, existing === undefined ? 0 : existing.value, op.delta)
  return existing ? { ...existing, value, revision } : { key: op.key, value, revision, created: revision }
}

/**
 * The entry a `set` writes over `existing`: see {@link written}. Apart, so a
 * store that never adds (zaris/elect's and zaris/tabs' page store) loads no
 * counter code.
 */
export function setWritten(
  op: Extract<Op, { type: 'set' }>,
  existing: Stored | undefined,
  revision: number,
  now: number,
  copy: (value: Value) => Value = (v) => v,
): Stored {
  const sameLife = existing !== undefined && !op.fresh && existing.owner === op.owner
  const e: Stored = { key: op.key, value: copy(op.value), revision, created: sameLife ? existing.created : revision }
  if (op.owner !== undefined) e.owner = op.owner
  if (op.ttl !== undefined) {
    e.ttl = op.ttl
    e.expiresAt = now + op.ttl
  }
  return e
}

/** `base + delta` for the `add` op on `key`, or the `InvalidArgumentError` that refuses it. */
export function added(key: string, base: Value, delta: number): number {
  if (typeof base !== 'number') {
    throw new InvalidArgumentError(`add ${JSON.stringify(key)}: the key holds ${describe(base)}, not a number`)
  }
  const sum = base + delta
  if (!Number.isSafeInteger(sum)) {
    throw new InvalidArgumentError(`add ${JSON.stringify(key)}: ${base} + ${delta} is not a safe integer (the result must lie within ±${Number.MAX_SAFE_INTEGER})`)
  }
  return sum
}

/** The revision after `revision`, or the `RevisionExhaustedError` of a store that has none left. */
export function nextRevision(revision: number): number {
  if (revision >= Number.MAX_SAFE_INTEGER) {
    throw new RevisionExhaustedError(
      `the store is at revision ${revision}, the largest safe integer: it takes no more writes (move its data to a new store)`,
    )
  }
  return revision + 1
}

/** Whether a store at `revision` can still take a revision (for expiries, which must not throw). */
export function hasRevisionLeft(revision: number): boolean {
  return revision < Number.MAX_SAFE_INTEGER
}

/**
 * The revision a store that may have lost its state moves up to before a
 * commit whose client has seen `seen`: at least `revision`, and never past
 * {@link SEEN_REVISION_LIMIT} because a client said so (see
 * `CommitOptions.seen`).
 */
export function floorRevision(revision: number, seen: number | undefined): number {
  if (seen === undefined) return revision
  if (!Number.isSafeInteger(seen) || seen < 0) throw new InvalidArgumentError(`seen must be a revision (an integer >= 0), got ${describe(seen)}`)
  if (seen <= revision) return revision
  return Math.max(revision, Math.min(seen, SEEN_REVISION_LIMIT))
}
