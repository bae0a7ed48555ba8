/**
 * `client.counters`: numbers that many clients add to at once without losing
 * an update. Each increment is one commit of the contract's `add` op, with no
 * checks: the store adds in place, so an increment never conflicts and never
 * retries (one round trip, however many clients add at once).
 *
 * The arguments are checked here; the operations (counter-ops.ts) load on
 * first use.
 *
 * @module
 */
import type { Context } from './context'
import { InvalidArgumentError } from './contract/errors'
import { increment, read } from './counter-ops'
import { checkUserKey } from './contract/validate'

/**
 * The counter API of a client.
 *
 * @example
 * const done = await client.counters.increment('jobs:done') // 1, 2, 3 …
 */
export class Counters {
  readonly #ctx: Context

  /** @internal */
  constructor(ctx: Context) {
    this.#ctx = ctx
  }

  /**
   * Adds `delta` (default 1, any safe integer) to the counter `key`, creating
   * it at 0, and resolves the new value. Atomic under contention.
   *
   * @example
   * await client.counters.increment('jobs:done', 5)
   */
  async increment(key: string, delta = 1): Promise<number> {
    checkUserKey(key)
    if (!Number.isSafeInteger(delta)) throw new InvalidArgumentError(`delta must be a safe integer, got ${String(delta)}`)
    this.#ctx.assertOpen()
    return increment(this.#ctx, key, delta)
  }

  /**
   * The counter's current value (0 when it does not exist).
   *
   * @example
   * const n = await client.counters.get('jobs:done')
   */
  async get(key: string): Promise<number> {
    checkUserKey(key)
    this.#ctx.assertOpen()
    return read(this.#ctx, key)
  }
}
