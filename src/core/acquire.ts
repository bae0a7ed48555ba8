/**
 * Taking a hold: the one procedure behind `locks.acquire` and `leases.grant`.
 *
 * An attempt is `commit([{ key, revision: null }], [set])` — it succeeds only
 * if no live entry holds the key (claim.ts). While waiting, the waiter stands
 * in line and watches what beat it (acquire-machine.ts, wait-change.ts). A
 * plain try (`wait: 0`) does not queue and may take a free key before the
 * line does.
 *
 * @module
 */
import type { Value } from './adapter'
import { AcquireMachine } from './acquire-machine'
import { soleClaim } from './claim'
import type { Context } from './context'
import type { Hold, HoldInit } from './hold'
import { checkBoolean, checkUserKey, checkOptions, checkSignal, checkTtl, checkWait } from './validate'

/** Options shared by `locks.acquire` and `leases.grant`. */
export interface AcquireOptions {
  /** Milliseconds the hold lives without renewal. Default: the client's `ttl` (30 000). */
  ttl?: number
  /**
   * Milliseconds to keep trying while someone else holds the key (woken by
   * release and expiry, not by polling). Default 0: one attempt. `Infinity` waits until `signal` aborts.
   */
  wait?: number
  /** Aborts a wait; the call then rejects with the signal's reason. */
  signal?: AbortSignal
  /** Renew in the background at a third of the TTL while held. Default true. */
  autoRenew?: boolean
  /**
   * Take the key over even if someone holds it. The old holder's token dies
   * at once: its fenced writes fail and its renewals report the loss.
   */
  steal?: boolean
}

export async function acquire<V extends Value, H extends Hold<V>>(
  ctx: Context,
  key: string,
  value: V,
  rawOptions: AcquireOptions | undefined,
  make: (init: HoldInit<V>) => H,
): Promise<H | null> {
  checkUserKey(key)
  const options = checkOptions<AcquireOptions>(rawOptions)
  const ttl = options.ttl === undefined ? ctx.ttl : checkTtl(options.ttl)
  const wait = options.wait === undefined ? 0 : checkWait(options.wait)
  const signal = checkSignal(options.signal)
  const autoRenew = checkBoolean(options.autoRenew, 'autoRenew') ?? true
  const steal = checkBoolean(options.steal, 'steal') ?? false
  ctx.assertOpen()
  signal?.throwIfAborted()
  await ctx.ready
  const claim = soleClaim(ctx, key, { value, ttl, autoRenew, make })
  return new AcquireMachine(ctx, claim, { wait, signal, steal }).run()
}
