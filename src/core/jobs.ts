/**
 * `client.jobs`: run a scheduled job once per slot, however many instances
 * fire it. The scheduler of each instance (cron, a timer, a queue) calls
 * `once(name, slot, fn)` when it fires; the slot — the tick's scheduled time,
 * a date, any string the caller names — and not the local clock decides
 * what "the same run" is, so an instance whose clock is late by seconds
 * skips the tick the others ran instead of running it again.
 *
 * How (the body, ./jobs/body.ts):
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
import { fenceChecks, fenceRefused } from './hold/hold'
import type { Lock } from './hold/lock'
// The body comes with the client, as the election's does: in a page, each part loaded
// lazily made the app's bundler split what it shared with the entry into files of
// their own (docs/browser.md, "What a page loads").
import { once, readRecord } from './jobs/body'
import type { Fencing, JobRecord, JobResult, OnceOptions } from './jobs/record'
import type { Locks } from './locks'

export type { JobRecord, JobResult, OnceOptions }

/**
 * How the body fences the record's writes, handed to it from here: the body
 * importing the hold module itself makes the bundler move the contract's
 * checks out of a page's start chunk into chunks of their own (+700 B
 * min+gzip at start, measured with test/package/size.test.ts's bundle).
 */
const fencing: Fencing = { checks: fenceChecks, refused: fenceRefused }

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
    return once<T>(this.#ctx, this.#locks, fencing, name, slot, fn, options)
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
    return readRecord(this.#ctx, name, slot)
  }
}
