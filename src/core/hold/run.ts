/**
 * `locks.run` and `semaphores.run`: hold something while a function runs.
 * The hold renews itself meanwhile and is released when the function
 * settles, also when it throws.
 *
 * Decided here:
 * - When the hold is not had (someone else holds it and `wait` ran out), the
 *   function is called with `null`, as the Web Locks API calls back under
 *   `ifAvailable`: it can skip its work, log, or throw — `run` never
 *   silently drops it, and resolves with what it returns.
 * - When the hold ends while the function runs (it expired, was stolen, the
 *   client closed), its signal aborts so the function can stop; once the
 *   function settles, `run` rejects with that reason (a `HoldEndedError`)
 *   even if the function resolved, since its work may have overlapped
 *   another holder's. A function that throws rejects `run` with its own error.
 * - A release that cannot reach the store rejects `run` with that error; the
 *   hold then frees itself at its TTL.
 *
 * @module
 */

/** What `run` needs of a hold (a Lock, a LockSet, a Permit). */
export interface Releasable {
  readonly held: boolean
  readonly signal: AbortSignal
  release(): Promise<boolean>
}

/** Calls `fn` with `hold` (or `null`), releases it after; see the module doc. */
export async function runHeld<H extends Releasable, T>(hold: H | null, fn: (hold: H | null) => T | PromiseLike<T>): Promise<T> {
  if (!hold) return await fn(null)
  const signal = hold.signal // watched from now on, so a steal aborts it at once
  let result: T
  try {
    result = await fn(hold)
  } catch (err) {
    await hold.release().catch(() => {})
    throw err
  }
  const lost = hold.held ? undefined : signal.reason
  await hold.release()
  if (lost !== undefined) throw lost
  return result
}

/** `run(key, fn)` or `run(key, options, fn)`: the options and the function. */
export function runArgs<O, F>(optionsOrFn: O | F, fn: F | undefined): [O | undefined, F] {
  return typeof optionsOrFn === 'function' ? [undefined, optionsOrFn as F] : [optionsOrFn as O, fn as F]
}
