/**
 * The `LockManager` of zaris/web-locks: `request()` and `query()` as
 * `navigator.locks` answers them, over any zaris client.
 *
 * @module
 */
import type { Client } from '../core/client'
import type { LockMode } from '../core/locks'
import { checkOptions, checkPrefix } from '../core/contract/validate'
import { parseRequest, type LockGrantedCallback, type Parsed, type WebLockOptions } from './options'
import { decodeName } from './names'
import { Order } from './order'
import { runRequest } from './request'

/** A held or pending lock in a {@link LockManagerSnapshot}, as the specification names its fields. */
export interface LockInfo {
  /** The lock's name. */
  name: string
  /** `'exclusive'` or `'shared'`. */
  mode: LockMode
  /** The id of the zaris client that holds or waits (`client.id`). */
  clientId: string
}

/** What `query()` resolves: `held` in grant order, `pending` in line order. */
export interface LockManagerSnapshot {
  /** The locks held now, in the order they were granted. */
  held: LockInfo[]
  /** The requests waiting, in the order they stand in line. */
  pending: LockInfo[]
}

/** Options of {@link webLocks}. */
export interface WebLocksOptions {
  /**
   * Put before every name to make the zaris key (default `''`: the name is
   * the key, so `client.locks.holder(name)` sees the same lock). `query()`
   * lists the locks under it.
   */
  prefix?: string
}

/**
 * The Web Locks API's `LockManager` over a zaris client. Get one from {@link webLocks}.
 *
 * @example
 * const locks = webLocks(await connect('zaris://idb/app'))
 * await locks.request('outbox', async (lock) => flush(lock!.signal))
 */
export class WebLocks {
  /** The client it runs on. */
  readonly client: Client
  /** What it puts before every name. */
  readonly prefix: string
  readonly #order = new Order()

  /** @internal Use {@link webLocks}. */
  constructor(client: Client, options?: WebLocksOptions) {
    this.client = client
    this.prefix = checkPrefix(checkOptions<WebLocksOptions>(options).prefix ?? '', 'prefix')
  }

  /**
   * Requests the lock `name`, calls `callback` with it once granted (with
   * `null` under `ifAvailable` when it is not available), holds it until the
   * promise the callback returns settles, and resolves (or rejects) with
   * that promise once the lock is released.
   *
   * @example
   * const rows = await locks.request('import', { mode: 'exclusive', zaris: { ttl: 10_000 } }, async (lock) => runImport(lock!.signal))
   */
  request<T>(name: string, callback: LockGrantedCallback<T>): Promise<T>
  request<T>(name: string, options: WebLockOptions, callback: LockGrantedCallback<T>): Promise<T>
  request(...args: unknown[]): Promise<unknown> {
    let r: Parsed
    try {
      r = parseRequest(args, this.prefix)
    } catch (err) {
      return Promise.reject(err)
    }
    if (r.signal?.aborted) return Promise.reject(r.signal.reason)
    return runRequest(this.client, this.#order, r)
  }

  /**
   * Who holds and who waits for the locks under this manager's prefix, as
   * `navigator.locks.query()` answers: after every request this manager
   * made before the call has been granted, queued or settled.
   *
   * @example
   * const { held, pending } = await locks.query()
   * for (const p of pending) console.log(p.name, p.mode, 'waits, client', p.clientId)
   */
  async query(): Promise<LockManagerSnapshot> {
    await this.#order.settled()
    const q = await this.client.locks.query(this.prefix)
    const info = (x: { key: string; mode: LockMode; owner: string }): LockInfo => ({ name: decodeName(x.key.slice(this.prefix.length)), mode: x.mode, clientId: x.owner })
    return { held: q.held.map(info), pending: q.pending.map(info) }
  }
}

/**
 * A `LockManager` over `client`: code written for `navigator.locks` runs on
 * it unchanged, across tabs, processes and machines, with a TTL, a fencing
 * token and a signal on every lock.
 *
 * @example
 * import { connect } from 'zaris'
 * import { webLocks } from 'zaris/web-locks'
 * const locks = webLocks(await connect('zaris://localhost:7861/app'))
 * await locks.request('nightly-report', async (lock) => buildReport(lock!.token))
 */
export function webLocks(client: Client, options?: WebLocksOptions): WebLocks {
  return new WebLocks(client, options)
}
