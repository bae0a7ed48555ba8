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
 * The permits themselves (acquire/permit-part.ts) load on first use.
 *
 * @module
 */
import { checkAcquire, type AcquireOptions } from './acquire/checks'
import type { Context } from './context'
import { InvalidArgumentError } from './contract/errors'
import { MAX_PERMITS } from './contract/limits'
import { checkOptions, checkUserKey } from './contract/validate'
import type { Permit } from './hold/permit'
import { runArgs, runHeld } from './hold/run'
import { acquire } from './acquire'
import { permitHolders } from './semaphore-holders'

export { MAX_PERMITS } from './contract/limits'
export type { Permit } from './hold/permit'
export type { PermitHolder } from './semaphore-holders'
import type { PermitHolder } from './semaphore-holders'

/** Options of {@link Semaphores.acquire}. */
export interface SemaphoreOptions extends Omit<AcquireOptions, 'steal'> {
  /** How many permits may live at once (1 to 1 000 000). Required. */
  limit: number
}

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
    checkUserKey(key)
    const raw = checkOptions<SemaphoreOptions & { steal?: unknown }>(options)
    const limit = checkLimit(raw.limit)
    if (raw.steal !== undefined) throw new InvalidArgumentError('semaphores have no steal: a permit is taken only when one is free')
    const o = checkAcquire(this.#ctx, raw as AcquireOptions)
    return acquire(this.#ctx, { kind: 'permit', key, limit }, o)
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
    return permitHolders(this.#ctx, key)
  }
}

function checkLimit(limit: unknown): number {
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PERMITS) {
    throw new InvalidArgumentError(`limit must be an integer from 1 to ${MAX_PERMITS}, got ${typeof limit === 'number' ? limit : typeof limit}`)
  }
  return limit
}
