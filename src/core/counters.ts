/**
 * `client.counters`: numbers that many clients add to at once without losing
 * an update. Each increment is one commit of the contract's `add` op, with no
 * checks: the store adds in place, so an increment never conflicts and never
 * retries (one round trip, however many clients add at once).
 *
 * @module
 */
import type { Context } from './context'
import { InternalError, InvalidArgumentError } from './errors'
import { checkUserKey } from './validate'

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
    const r = await this.#ctx.adapter.commit([], [{ type: 'add', key, delta }])
    // No checks, so no failure: a store that answers otherwise breaks the contract.
    if (!r.ok) throw new InternalError(`counter ${JSON.stringify(key)}: the store refused an add with no checks`)
    return r.entries[0]!.value as number
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
    const entry = await this.#ctx.adapter.get(key)
    if (entry === undefined) return 0
    if (typeof entry.value !== 'number') throw new InvalidArgumentError(`key ${JSON.stringify(key)} holds a ${typeof entry.value}, not a counter`)
    return entry.value
  }
}
