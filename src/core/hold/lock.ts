/**
 * The handle of a held lock.
 *
 * @module
 */
import type { Context } from '../context'
import { Hold, type HoldInit, type LockMode } from './hold'

/**
 * A held lock: a TTL'd entry with no value, a fencing token and a signal.
 * Get one from `client.locks.acquire`.
 *
 * @example
 * const lock = await client.locks.acquire('lock:nightly-report', { ttl: 30_000 })
 * if (lock) {
 *   await using held = lock
 *   await client.put('report:status', 'done', { fence: held })
 * }
 */
export class Lock extends Hold<null> {
  /** `exclusive` (the only holder) or `shared` (one of many shared holders, never beside an exclusive one). */
  readonly mode: LockMode

  /** @internal Created by `locks.acquire`. */
  constructor(ctx: Context, init: HoldInit<null>) {
    super(ctx, init)
    this.mode = init.mode ?? 'exclusive'
  }

  /**
   * Releases the lock: true if it was still held. Releasing twice, or after
   * the lock was lost, is harmless and resolves false; it never removes a lock
   * another owner holds now.
   *
   * @example
   * await lock.release()
   */
  release(): Promise<boolean> {
    return this.finish()
  }
}
