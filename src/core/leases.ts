/**
 * `client.leases`: keys that live while their owner keeps them alive —
 * presence, membership, a published address. `grant` creates the key only if
 * no live entry holds it.
 *
 * @module
 */
import { checkAcquire, type AcquireOptions } from './acquire/checks'
import type { Context } from './context'
import type { Value } from './contract/adapter'
import { checkOptions, checkUserKey, checkValue } from './contract/validate'
import type { Lease } from './hold/lease'
import { acquire } from './acquire'

export { Lease } from './hold/lease'

/** Options of {@link Leases.grant}. */
export interface LeaseOptions<V extends Value = Value> extends AcquireOptions {
  /** The value stored at the key while the lease lives. Default `null`. */
  value?: V
}

/**
 * The lease API of a client.
 *
 * @example
 * const lease = await client.leases.grant('presence:tab-1', { ttl: 10_000, value: { since: Date.now() } })
 */
export class Leases {
  readonly #ctx: Context

  /** @internal */
  constructor(ctx: Context) {
    this.#ctx = ctx
  }

  /**
   * Creates `key` with `value` as a lease of this client, or resolves `null`
   * when a live entry already holds the key.
   *
   * @example
   * await using lease = await client.leases.grant('presence:tab-1', { value: 'tab 1' })
   */
  grant<V extends Value = Value>(key: string, options?: LeaseOptions<V>): Promise<Lease<V> | null> {
    const value = (options?.value === undefined ? null : checkValue(options.value)) as V
    return Promise.resolve().then(() => {
      checkUserKey(key)
      const o = checkAcquire(this.#ctx, checkOptions<LeaseOptions<V>>(options))
      return acquire(this.#ctx, { kind: 'lease', key, value }, o)
    })
  }
}
