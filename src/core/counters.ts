/**
 * `client.counters`: numbers that many clients add to at once without losing
 * an update. Each increment is a compare-and-set on the counter's revision,
 * retried with the value the failed commit returned (one round trip a retry).
 *
 * @module
 */
import type { Context } from './context'
import { InvalidArgumentError } from './errors'
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
    let current = await this.#ctx.adapter.get(key)
    for (;;) {
      const base = current === undefined ? 0 : current.value
      if (typeof base !== 'number') {
        throw new InvalidArgumentError(`key ${JSON.stringify(key)} holds a ${typeof base}, not a counter`)
      }
      const next = base + delta
      if (!Number.isSafeInteger(next)) throw new InvalidArgumentError(`counter ${JSON.stringify(key)} would leave the safe integer range`)
      const r = await this.#ctx.adapter.commit(
        [{ key, revision: current === undefined ? null : current.revision }],
        [{ type: 'set', key, value: next }],
      )
      if (r.ok) return next
      current = r.failed[0]?.entry
    }
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
