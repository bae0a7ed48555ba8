/**
 * A job's slot on the store: the lock a run holds (`name@slot`, a plain
 * lock key, shown by `locks.query` and `zaris locks`) and the slot's record
 * beside it (U+0001 `j` + the lock key: a reserved key, hidden from `list`
 * and `watch`, read with `jobs.record`), and the checks of a name and a slot.
 * Shared by the facade (../jobs.ts) and the body it loads (./body.ts).
 *
 * @module
 */
import type { Check, Entry, Value } from '../contract/adapter'
import { InvalidArgumentError } from '../contract/errors'
import { JOB_PREFIX } from '../contract/reserved'
import type { Context } from '../context'
import type { Failed, Fence } from '../hold/life'
import { checkOptions, checkSignal, checkTtl, checkUserKey, checkWait, describe, isWellFormed, MAX_KEY_LENGTH } from '../contract/validate'

/** Ends the job's name inside its lock key: a name may not contain it, a slot may. */
export const SLOT_SEP = '@'

/** The most UTF-16 code units of a recorded error message: a record stays small. */
export const MAX_ERROR_LENGTH = 500

/**
 * What the store keeps of one slot of a job, from the first run's start
 * until the retention after its last write.
 *
 * @example
 * const r = await client.jobs.record('nightly-report', '2024-06-01') // { state: 'done', by: 'worker-2', token: 812, attempt: 1 }
 */
export interface JobRecord {
  /** `started`: a run began (it runs, or its holder died); `done`: it returned; `failed`: it threw, or its holder died and no retry is left. */
  state: 'started' | 'done' | 'failed'
  /** The id of the client whose run this is (the last attempt's). */
  by: string
  /** That run's fencing token: the token of the lock it held. */
  token: number
  /** 1 for the first run, 2 for its first retry, ... */
  attempt: number
  /** Why it failed (the error's message, cut to 500 UTF-16 code units). */
  error?: string
}

/** How long a slot's record is kept after its last write, by default: a day. */
export const DEFAULT_RETENTION = 24 * 60 * 60 * 1000

/** The most retries one slot may be given. */
export const MAX_RETRIES = 100

/** Options of `client.jobs.once`. */
export interface OnceOptions {
  /** The TTL in ms of the lock a run holds (renewed at a third of it while `fn` runs): how soon a dead run can be retried. Default: the client's `ttl`. */
  ttl?: number
  /**
   * How long in ms the slot's record is kept after its last write (on the
   * store's clock): longer than the latest instance can fire the slot, and
   * than the longest run. Default 24 h; at least `ttl`.
   */
  retention?: number
  /** How many times a run that failed (threw, or its holder died) may be run again by a later call. Default 1. */
  retries?: number
  /**
   * How long in ms to wait for a run of the slot under way elsewhere to end,
   * so that this call runs the retry if that run fails. Default 0: skip at
   * once. `Infinity` waits until it ends (or `signal` aborts).
   */
  wait?: number
  /** Aborts a wait; `once` then rejects with the signal's reason. */
  signal?: AbortSignal
}

/** What a call of `client.jobs.once` did. */
export type JobResult<T> =
  /** This call ran `fn`, which returned `value`; the record says `done`. */
  | { status: 'ran'; value: T; token: number; attempt: number }
  /**
   * This call ran `fn` and it failed: `error` is what `fn` threw, or — when
   * its lock ended before the outcome was written (a run that outlived its
   * TTL, a steal) — the `HoldEndedError` (or `FencedError`) saying so; then
   * the record still says `started` and the next call counts it as failed.
   */
  | { status: 'failed'; error: unknown; token: number; attempt: number }
  /**
   * This call did not run `fn`: the slot is `running` (another instance
   * holds its lock), `done`, or `failed` with no retry left. `by` is the
   * client whose run it is, `token` that run's token.
   */
  | { status: 'skipped'; state: 'running' | 'done' | 'failed'; by: string; token: number }

/** The options of one call, checked, with their defaults. @internal */
export interface OnceChecked {
  ttl: number
  retention: number
  retries: number
  wait: number
  signal: AbortSignal | undefined
}

/** How a write is fenced by a hold, and whether a refusal was for the fence (the hold then ends): hold.ts's `fenceChecks` and `fenceRefused`. */
export interface Fencing {
  checks(fence: Fence): Check[]
  refused(fence: Fence, failed: Failed): boolean
}

/** The two keys of one slot. */
export interface SlotKeys {
  /** The lock a run holds: `name@slot`. */
  lock: string
  /** The slot's record: U+0001 `j` + the lock key. */
  record: string
}

/** The keys of slot `slot` of job `name` (both checked). */
export function slotKeys(name: string, slot: string): SlotKeys {
  const lock = name + SLOT_SEP + slot
  return { lock, record: JOB_PREFIX + lock }
}

/** Checks a job's name: a user key without `@`, which ends the name inside the slot's lock key. */
export function checkJobName(name: unknown): string {
  checkUserKey(name, 'name')
  if ((name as string).includes(SLOT_SEP)) {
    throw new InvalidArgumentError(`name must not contain "@": it ends the job's name in the slot's lock key (name@slot), got ${JSON.stringify(name)}`)
  }
  return name as string
}

/**
 * Checks a slot and returns it as a string: a non-empty well-formed string
 * as is, a valid `Date` as its ISO string, a finite number as `String(n)`.
 * `name@slot` must leave room for the record's key (two units more) within
 * the key limit.
 */
export function checkSlot(slot: unknown, name: string): string {
  let s: string
  if (typeof slot === 'string') s = slot
  else if (typeof slot === 'number' && Number.isFinite(slot)) s = String(slot)
  else if (slot instanceof Date && !Number.isNaN(slot.getTime())) s = slot.toISOString()
  else throw new InvalidArgumentError(`slot must be a string, a finite number or a valid Date, got ${describe(slot)}`)
  if (s === '') throw new InvalidArgumentError('slot must not be empty')
  if (!isWellFormed(s)) throw new InvalidArgumentError('slot contains a lone surrogate (it is not well-formed UTF-16)')
  const room = MAX_KEY_LENGTH - JOB_PREFIX.length - name.length - SLOT_SEP.length
  if (s.length > room) throw new InvalidArgumentError(`slot must be at most ${room} UTF-16 code units with this name (name@slot is a key, and its record's key two units longer), got ${s.length}`)
  return s
}

const STATES = new Set(['started', 'done', 'failed'])

/** The record in `entry`, or `undefined` when there is none (or it is not a record: nothing zaris wrote). */
export function recordOf(entry: Entry | undefined): JobRecord | undefined {
  const v = entry?.value as Partial<JobRecord> | undefined
  if (typeof v !== 'object' || v === null || !STATES.has(v.state as string)) return undefined
  if (typeof v.by !== 'string' || typeof v.token !== 'number' || typeof v.attempt !== 'number') return undefined
  return v as JobRecord
}

/** A record as the value written. */
export function recordValue(r: JobRecord): Value {
  return r.error === undefined ? { state: r.state, by: r.by, token: r.token, attempt: r.attempt } : { ...r, error: r.error }
}

/** An error's message for a record, cut to {@link MAX_ERROR_LENGTH}. */
export function errorText(err: unknown): string {
  let text: string
  try {
    text = err instanceof Error ? `${err.name}: ${err.message}` : String(err)
  } catch {
    text = describe(err) // String() throws for an object without a prototype
  }
  const cut = text.slice(0, MAX_ERROR_LENGTH)
  // Not inside a surrogate pair, so the record stays well-formed.
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut
}

/** Checks the options of a call, with their defaults. */
export function checkOnce(ctx: Context, options: OnceOptions | undefined): OnceChecked {
  const o = checkOptions<OnceOptions>(options)
  const ttl = o.ttl === undefined ? ctx.ttl : checkTtl(o.ttl)
  const retention = o.retention === undefined ? Math.max(DEFAULT_RETENTION, ttl) : checkTtl(o.retention, 'retention')
  if (retention < ttl) throw new InvalidArgumentError(`retention (${retention} ms) must be at least the lock's ttl (${ttl} ms): a record must outlive the run that wrote it`)
  const retries = o.retries ?? 1
  if (!Number.isSafeInteger(retries) || retries < 0 || retries > MAX_RETRIES) {
    throw new InvalidArgumentError(`retries must be an integer from 0 to ${MAX_RETRIES}, got ${describe(retries)}`)
  }
  return { ttl, retention, retries, wait: o.wait === undefined ? 0 : checkWait(o.wait), signal: checkSignal(o.signal) }
}
