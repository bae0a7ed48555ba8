/**
 * The lock a request's callback receives: the Web Locks API's `name` and
 * `mode`, and what zaris adds — the fencing `token`, a `signal` that
 * aborts when the hold is lost, and the hold itself as a `fence` for
 * fenced writes.
 *
 * @module
 */
import type { Fence, Lock, LockMode } from '../core/locks'

/**
 * A granted lock, as the callback of `request()` receives it.
 *
 * @example
 * await locks.request('report', async (lock) => {
 *   await client.put('report:status', 'running', { fence: lock!.fence })
 *   console.log(lock!.name, lock!.mode, lock!.token)
 * })
 */
export class WebLock {
  /** The name it was requested with. */
  readonly name: string
  /** `'exclusive'` or `'shared'`. */
  readonly mode: LockMode
  /** The fencing token: strictly larger than every earlier holder's of the store; the same while held. */
  readonly token: number
  /**
   * Aborts when the hold ends: lost while the callback runs (stolen,
   * expired, the client closed — its `reason` is a `HoldEndedError` saying
   * which), or released once the callback settled.
   */
  readonly signal: AbortSignal
  /** The hold, to pass as `fence` to `put` and `delete`: the write is refused once the lock is no longer held. */
  readonly fence: Fence

  /** @internal Made by `request()`. */
  constructor(name: string, hold: Lock) {
    this.name = name
    this.mode = hold.mode
    this.token = hold.token
    this.signal = hold.signal
    this.fence = hold
  }
}
