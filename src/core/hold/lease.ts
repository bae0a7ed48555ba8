/**
 * The handle of a granted lease (and of an election's term).
 *
 * @module
 */
import type { Value } from '../contract/adapter'
import { Hold } from './hold'

/**
 * A granted lease: a key with a value that lives while its owner renews it.
 * Get one from `client.leases.grant`.
 *
 * @example
 * const lease = await client.leases.grant('presence:tab-1', { ttl: 10_000, value: { name: 'tab 1' } })
 * lease?.signal.addEventListener('abort', () => console.log('gone'))
 */
export class Lease<V extends Value = Value> extends Hold<V> {
  /** The value the lease was granted with. */
  get value(): V {
    return this.heldValue
  }

  /**
   * Revokes the lease and deletes its key: true if it was still held.
   *
   * @example
   * await lease.revoke()
   */
  revoke(): Promise<boolean> {
    return this.finish()
  }
}
