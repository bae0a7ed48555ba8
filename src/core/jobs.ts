/**
 * `client.jobs`: run a scheduled job once per slot, however many instances
 * fire it. The scheduler of each instance (cron, a timer, a queue) calls
 * `once(name, slot, fn)` when it fires; the slot — the tick's scheduled time,
 * a date, any string the caller names — and not the local clock decides
 * what "the same run" is, so an instance whose clock is late by seconds
 * skips the tick the others ran instead of running it again.
 *
 * How (the body, ./jobs/body.ts, loaded on the first `once`):
 * - A run holds the lock `name@slot` (TTL `ttl`, renewed while `fn` runs)
 *   and writes the slot's record beside it, every write fenced by that
 *   lock: `started` (by whom, with which token, which attempt) before `fn`
 *   is called, then `done` or `failed` (with the error's message). The
 *   record lives for `retention` after its last write (default 24 h), so a
 *   late instance finds it and skips.
 * - A run whose holder died (its lock ended with the record still
 *   `started`) or whose `fn` threw is run again by the next call that finds
 *   the lock free, at most `retries` times (default 1), each a new attempt
 *   with a new token; past that the record says `failed` and calls skip.
 * - Two runs of a slot never hold its lock at once, and the record is
 *   written only under the lock, checked in the same commit; a run that
 *   outlives its lock (paused past its TTL) can no longer write there, nor
 *   anywhere its writes pass `{ fence: lock }`, and its result says
 *   `failed` with the reason its hold ended.
 *
 * Not guaranteed: `fn`'s side effects outside the store are not undone when
 * its hold ends; they are exactly-once only where they are fenced by the
 * lock's token (a store write with `{ fence: lock }`, or a resource that
 * checks the token). A retry runs `fn` again from the start.
 *
 * @module
 */
import type { Context } from './context'
import { InvalidArgumentError } from './contract/errors'
import { once } from './contract/once'
import { checkOptions, checkSignal, checkTtl, checkWait, describe } from './contract/validate'
import type { Lock } from './hold/lock'
import { checkJobName, checkSlot, recordOf, slotKeys, type JobRecord, type JobResult, type OnceChecked } from './jobs/record'
import type { Locks } from './locks'

export type { JobRecord, JobResult }

/** How long a slot's record is kept after its last write, by default: a day. */
export const DEFAULT_RETENTION = 24 * 60 * 60 * 1000

/** The most retries one slot may be given. */
export const MAX_RETRIES = 100

/** Options of {@link Jobs.once}. */
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

/** The body, imported here rather than in on-demand.ts, as election.ts does its own. */
const jobsBody = once(() => import('./jobs/body'), 'jobs')

/**
 * The job API of a client.
 *
 * @example
 * cron.schedule('0 3 * * *', () => client.jobs.once('nightly-report', new Date().toISOString().slice(0, 10), (lock) => buildReport(lock)))
 */
export class Jobs {
  readonly #ctx: Context
  readonly #locks: Locks

  /** @internal */
  constructor(ctx: Context, locks: Locks) {
    this.#ctx = ctx
    this.#locks = locks
  }

  /**
   * Runs `fn(lock)` for slot `slot` of job `name` unless some instance on
   * this store already ran (or runs) it, and resolves what happened. `lock`
   * is the held {@link Lock}: pass it as `{ fence: lock }` to the run's
   * writes and stop when `lock.signal` aborts. Rejects only before `fn` is
   * called: bad input (`InvalidArgumentError`), an aborted wait, or a store
   * that cannot be reached.
   *
   * @example
   * const result = await client.jobs.once('nightly-report', '2024-06-01', async (lock) => {
   *   const report = await buildReport(lock.signal)
   *   await client.put('report:2024-06-01', report, { fence: lock })
   *   return report.rows
   * })
   * if (result.status === 'skipped') console.log(`already run by ${result.by}`)
   */
  async once<T>(name: string, slot: string | number | Date, fn: (lock: Lock) => T | PromiseLike<T>, options?: OnceOptions): Promise<JobResult<Awaited<T>>> {
    const n = checkJobName(name)
    const keys = slotKeys(n, checkSlot(slot, n))
    if (typeof fn !== 'function') throw new InvalidArgumentError(`once needs a function to run, got ${describe(fn)}`)
    const o = checkOnce(this.#ctx, options)
    this.#ctx.assertOpen()
    o.signal?.throwIfAborted()
    const { runOnce } = await jobsBody()
    return runOnce(this.#ctx, this.#locks, keys, fn, o)
  }

  /**
   * The record of slot `slot` of job `name`: who ran it, with which token,
   * and how it ended; `undefined` when no run started (or its retention passed).
   *
   * @example
   * const r = await client.jobs.record('nightly-report', '2024-06-01')
   * if (r?.state === 'failed') console.log(`failed after ${r.attempt} attempt(s): ${r.error}`)
   */
  async record(name: string, slot: string | number | Date): Promise<JobRecord | undefined> {
    const n = checkJobName(name)
    const keys = slotKeys(n, checkSlot(slot, n))
    this.#ctx.assertOpen()
    return recordOf(await this.#ctx.adapter.get(keys.record))
  }
}

function checkOnce(ctx: Context, options: OnceOptions | undefined): OnceChecked {
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
