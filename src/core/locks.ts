/**
 * `client.locks`: mutual exclusion with TTLs and fencing tokens.
 *
 * A lock is a lease with no value. `acquire` never blocks unless asked to
 * (`wait`), and locks are not reentrant: a client that holds a lock gets
 * `null` when it asks for it again.
 *
 * @module
 */
import { acquire, type AcquireOptions } from './acquire'
import type { Context } from './context'
import { Lock } from './hold'
import { checkUserKey } from './validate'

/** Options of {@link Locks.acquire}. */
export type LockOptions = AcquireOptions

/** Who holds a lock, from {@link Locks.holder}. */
export interface Holder {
  /** The holding client's id. */
  owner: string
  /** The holder's fencing token. */
  token: number
  /** Milliseconds left on the store's clock, if the entry has a TTL. */
  ttl?: number
}

/**
 * The lock API of a client.
 *
 * @example
 * const lock = await client.locks.acquire('lock:job', { ttl: 10_000, wait: 5_000 })
 */
export class Locks {
  readonly #ctx: Context

  /** @internal */
  constructor(ctx: Context) {
    this.#ctx = ctx
  }

  /**
   * Takes the lock `key`: a {@link Lock}, or `null` when someone else holds
   * it (after `wait` ms, if given). Rejects with `signal.reason` on abort.
   *
   * @example
   * const lock = await client.locks.acquire('lock:nightly-report', { ttl: 30_000 })
   * if (!lock) console.log('Another instance holds the lock. Skipping.')
   */
  acquire(key: string, options?: LockOptions): Promise<Lock | null> {
    return acquire(this.#ctx, key, null, options, (init) => new Lock(this.#ctx, init))
  }

  /**
   * Who holds the lock `key` now, or `undefined` when nobody does.
   *
   * @example
   * const h = await client.locks.holder('lock:nightly-report') // { owner, token, ttl }
   */
  async holder(key: string): Promise<Holder | undefined> {
    checkUserKey(key)
    this.#ctx.assertOpen()
    const entry = await this.#ctx.adapter.get(key)
    if (!entry || entry.owner === undefined) return undefined
    const holder: Holder = { owner: entry.owner, token: entry.created }
    if (entry.ttl !== undefined) holder.ttl = entry.ttl
    return holder
  }
}
