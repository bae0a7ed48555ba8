/**
 * A held permit of a semaphore: a hold like a lock's (token, signal, renew,
 * release, `await using`) that also records the limit it was taken with.
 *
 * @module
 */
import type { Context } from '../context'
import { Hold, type HoldInit } from './hold'

/**
 * A held permit of a semaphore: the same handle as a `Lock` (token, signal,
 * renew, release, `await using`). Get one from `client.semaphores.acquire`.
 *
 * @example
 * const permit = await client.semaphores.acquire('sem:uploads', { limit: 3, wait: 10_000 })
 * if (permit) {
 *   await using held = permit
 *   await upload(held.signal)
 * }
 */
export class Permit extends Hold<null> {
  /** The limit this permit was taken with. */
  readonly limit: number

  /** @internal Created by `semaphores.acquire`. */
  constructor(ctx: Context, init: HoldInit<null>, limit: number) {
    super(ctx, init)
    this.limit = limit
  }

  /**
   * Releases the permit: true if it was still held. Twice, or after it was
   * lost, resolves false and never touches a permit someone else holds now.
   *
   * @example
   * await permit.release()
   */
  release(): Promise<boolean> {
    return this.finish()
  }
}
