/**
 * `client.semaphores`: at most `limit` holders of a key at once — "at most 3
 * workers upload at once". Each holder gets a {@link Permit}, the same
 * handle as a `Lock`: its own fencing token, TTL, signal, renewals and
 * release. Waiters stand in the semaphore's line and are served in order.
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
 * @module
 */
import { checkAcquire, take, type AcquireOptions } from './acquire'
import { claimOf } from './claim'
import type { Context } from './context'
import { InvalidArgumentError } from './errors'
import { Hold, type HoldInit } from './hold'
import { PermitPart, slotOf, slotPrefix } from './permit-part'
import { PERMIT_PREFIX } from './reserved'
import { runArgs, runHeld } from './run'
import { checkOptions, checkUserKey, MAX_KEY_LENGTH } from './validate'

/** The largest `limit` a semaphore may have. */
export const MAX_PERMITS = 1_000_000

/** Options of {@link Semaphores.acquire}. */
export interface SemaphoreOptions extends Omit<AcquireOptions, 'steal'> {
  /** How many permits may live at once (1 to 1 000 000). Required. */
  limit: number
}

/** A holder of a semaphore's permit, from {@link Semaphores.holders}. */
export interface PermitHolder {
  /** The holding client's id. */
  owner: string
  /** The permit's fencing token. */
  token: number
  /** Milliseconds left on the store's clock. */
  ttl?: number
  /** The limit the permit was taken with. */
  limit: number
  /** Its slot: a number below that limit. */
  slot: number
}

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
   * Takes a permit of the semaphore `key`: a {@link Permit}, or `null` when
   * `limit` permits are held (after `wait` ms, if given). Rejects with
   * `signal.reason` on abort.
   *
   * @example
   * const permit = await client.semaphores.acquire('sem:uploads', { limit: 3 })
   * if (!permit) console.log('three uploads run already')
   */
  async acquire(key: string, rawOptions: SemaphoreOptions): Promise<Permit | null> {
    const ctx = this.#ctx
    checkUserKey(key)
    const options = checkOptions<SemaphoreOptions & { steal?: unknown }>(rawOptions)
    const limit = checkLimit(options.limit)
    if (options.steal !== undefined) throw new InvalidArgumentError('semaphores have no steal: a permit is taken only when one is free')
    if ((slotPrefix(key) + (limit - 1)).length > MAX_KEY_LENGTH) {
      throw new InvalidArgumentError(`a semaphore's key must leave room for its slots under it: at most ${MAX_KEY_LENGTH - slotPrefix('').length - String(limit - 1).length} UTF-16 code units with limit ${limit}, got ${key.length}`)
    }
    const o = checkAcquire(ctx, options as AcquireOptions)
    const part = new PermitPart(ctx, key, limit, { value: null, ttl: o.ttl, autoRenew: o.autoRenew, make: (init) => new Permit(ctx, init, limit) })
    return take(ctx, claimOf(ctx, [part], { key: PERMIT_PREFIX + key, value: 'permit' }, ([p]) => p!), o)
  }

  /**
   * Takes a permit (as `acquire`), calls `fn` with it, renews it while `fn`
   * runs and releases it when `fn` settles, also when it throws; resolves
   * with what `fn` returns. `fn` gets `null` when no permit was had within
   * `wait`; when the permit ends while `fn` runs, `run` rejects with the
   * reason once `fn` settles (see `locks.run`).
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
    const prefix = slotPrefix(key)
    const holders: PermitHolder[] = []
    for (const e of await this.#ctx.adapter.list(prefix)) {
      const slot = slotOf(prefix, e.key)
      if (slot === undefined || e.owner === undefined) continue
      const limit = (e.value as { limit?: unknown } | null)?.limit
      const h: PermitHolder = { owner: e.owner, token: e.created, limit: typeof limit === 'number' ? limit : slot + 1, slot }
      if (e.ttl !== undefined) h.ttl = e.ttl
      holders.push(h)
    }
    return holders.sort((a, b) => a.slot - b.slot)
  }
}

function checkLimit(limit: unknown): number {
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PERMITS) {
    throw new InvalidArgumentError(`limit must be an integer from 1 to ${MAX_PERMITS}, got ${typeof limit === 'number' ? limit : typeof limit}`)
  }
  return limit
}
