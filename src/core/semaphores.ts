/**
 * `client.semaphores`: at most `limit` holders of a key at once — "at most 3
 * workers upload at once". Each holder gets a `Permit`, the same handle as a
 * `Lock`: its own fencing token, TTL, signal, renewals and release. Waiters
 * stand in the semaphore's line and are served in order.
 *
 * How the limit is kept: a semaphore of limit `n` is `n` slots, each an
 * entry held like a lock (permit-part.ts), so the store's compare-and-set on
 * each slot keeps the count — nothing to drift when a holder crashes (its
 * slot expires at its TTL, or at once on a store that knows its client is
 * gone). The limit is not stored apart: each request brings its own and
 * takes one of the slots below it, and each permit records the limit it
 * was taken with (`holders()` shows it). So when every client asks with the
 * same limit, at most `limit` permits live. When two clients ask with
 * different limits — a rolling deploy from 3 to 5 — a request with limit
 * `n` is granted only while one of the first `n` slots is free: at most
 * the largest limit in use live at once, and a client with the smaller
 * limit never takes a permit past its own limit's slots.
 *
 * The permits themselves (permits.ts) load on first use.
 *
 * @module
 */
import type { AcquireOptions } from './acquire-checks'
import type { Context } from './context'
import { InvalidArgumentError } from './errors'
import { permits } from './on-demand'
import type { Permit, PermitHolder, SemaphoreOptions } from './permits'
import { runArgs, runHeld } from './run'
import { checkOptions, checkUserKey } from './validate'

export { MAX_PERMITS } from './limits'
export type { PermitHolder, SemaphoreOptions } from './permits'

/**
 * The semaphore API of a client.
 *
 * @example
 * const permit = await client.semaphores.acquire('sem:uploads', { limit: 3, ttl: 60_000, wait: 30_000 })
 */
export class Semaphores {
  readonly #ctx: Context

  /** @internal */
  constructor(ctx: Context) {
    this.#ctx = ctx
  }

  /**
   * Takes a permit of the semaphore `key`: a `Permit`, or `null` when
   * `limit` permits are held (after `wait` ms, if given). Rejects with
   * `signal.reason` on abort.
   *
   * @example
   * const permit = await client.semaphores.acquire('sem:uploads', { limit: 3 })
   * if (!permit) console.log('three uploads run already')
   */
  async acquire(key: string, options: SemaphoreOptions): Promise<Permit | null> {
    return (await permits()).acquirePermit(this.#ctx, key, options)
  }

  /**
   * Takes a permit (as `acquire`), calls `fn` with it, renews it while `fn`
   * runs and releases it when `fn` settles, also when it throws; resolves
   * with what `fn` returns. `fn` gets `null` when no permit was had within
   * `wait`; when the permit ends while `fn` runs, `run` rejects with the
   * reason once `fn` settles (as `locks.run`).
   *
   * @example
   * await client.semaphores.run('sem:uploads', { limit: 3, wait: Infinity }, async (permit) => upload(permit!.signal))
   */
  async run<T>(key: string, options: Omit<SemaphoreOptions, 'autoRenew'>, fn: (permit: Permit | null) => T | PromiseLike<T>): Promise<T> {
    const [o, f] = runArgs<Omit<SemaphoreOptions, 'autoRenew'>, typeof fn>(options, fn)
    if (typeof f !== 'function') throw new InvalidArgumentError('run needs a function to call with the permit')
    const permit = await this.acquire(key, { ...checkOptions<SemaphoreOptions>(o), autoRenew: true } as SemaphoreOptions)
    return runHeld(permit, f)
  }

  /**
   * Who holds permits of the semaphore `key` now, by slot.
   *
   * @example
   * const holders = await client.semaphores.holders('sem:uploads') // [{ owner, token, ttl, limit, slot }, …]
   */
  async holders(key: string): Promise<PermitHolder[]> {
    checkUserKey(key)
    this.#ctx.assertOpen()
    return (await permits()).permitHolders(this.#ctx, key)
  }
}
