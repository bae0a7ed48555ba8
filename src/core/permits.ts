/**
 * Semaphore permits: the `Permit` handle and the acquire behind
 * `client.semaphores` (semaphores.ts has the rules). Loaded when a client
 * first uses a semaphore, so that apps that never do carry none of it.
 *
 * @module
 */
import { take } from './acquire'
import { checkAcquire, type AcquireOptions } from './acquire-checks'
import { claimOf } from './claim'
import type { Context } from './context'
import { InvalidArgumentError } from './errors'
import { Hold, type HoldInit } from './hold'
import { listAll } from './pages'
import { PermitPart, slotOf, slotPrefix } from './permit-part'
import { PERMIT_PREFIX } from './reserved'
import { checkOptions, checkUserKey, MAX_KEY_LENGTH } from './validate'
import { MAX_PERMITS } from './limits'

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

/** Takes a permit of semaphore `key`; see `Semaphores.acquire`. */
export async function acquirePermit(ctx: Context, key: string, rawOptions: SemaphoreOptions | undefined): Promise<Permit | null> {
  checkUserKey(key)
  const options = checkOptions<SemaphoreOptions & { steal?: unknown }>(rawOptions)
  const limit = checkLimit(options.limit)
  if (options.steal !== undefined) throw new InvalidArgumentError('semaphores have no steal: a permit is taken only when one is free')
  if ((slotPrefix(key) + (limit - 1)).length > MAX_KEY_LENGTH) {
    const room = MAX_KEY_LENGTH - slotPrefix('').length - String(limit - 1).length
    throw new InvalidArgumentError(`a semaphore's key must leave room for its slots under it: at most ${room} UTF-16 code units with limit ${limit}, got ${key.length}`)
  }
  const o = checkAcquire(ctx, options as AcquireOptions)
  const part = new PermitPart(ctx, key, limit, { value: null, ttl: o.ttl, autoRenew: o.autoRenew, make: (init) => new Permit(ctx, init, limit) })
  return take(ctx, claimOf(ctx, [part], { key: PERMIT_PREFIX + key, value: 'permit' }, ([p]) => p!), o)
}

/** Who holds permits of semaphore `key`, by slot. */
export async function permitHolders(ctx: Context, key: string): Promise<PermitHolder[]> {
  const prefix = slotPrefix(key)
  const holders: PermitHolder[] = []
  for (const e of await listAll(ctx.adapter, prefix)) {
    const slot = slotOf(prefix, e.key)
    if (slot === undefined || e.owner === undefined) continue
    const limit = (e.value as { limit?: unknown } | null)?.limit
    const h: PermitHolder = { owner: e.owner, token: e.created, limit: typeof limit === 'number' ? limit : slot + 1, slot }
    if (e.ttl !== undefined) h.ttl = e.ttl
    holders.push(h)
  }
  return holders.sort((a, b) => a.slot - b.slot)
}

function checkLimit(limit: unknown): number {
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PERMITS) {
    throw new InvalidArgumentError(`limit must be an integer from 1 to ${MAX_PERMITS}, got ${typeof limit === 'number' ? limit : typeof limit}`)
  }
  return limit
}
