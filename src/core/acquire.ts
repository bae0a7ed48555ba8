/**
 * Taking a hold: the procedures behind `locks.acquire`, `leases.grant`,
 * elections and `semaphores.acquire`. Each checks its options at the call,
 * builds the claim of what it takes (claim.ts and its parts) and runs the
 * acquire machine (acquire-machine.ts), which waits in line when asked to.
 * A plain try (`wait: 0`) does not queue and may take a free key before the
 * line does — unless the acquire asks to respect the line (`IN_LINE`).
 *
 * This module and the machine are a chunk loaded on a client's first acquire
 * (`acquirePart` in locks.ts); what a call checks first is in
 * acquire-checks.ts, at start.
 *
 * @module
 */
import type { Value } from './adapter'
import { AcquireMachine } from './acquire-machine'
import { claimOf, type Claim, type HoldSpec, type Part } from './claim'
import type { Context } from './context'
import { checkAcquire, type AcquireOptions, type Checked } from './acquire-checks'
import { InvalidArgumentError } from './errors'
import { sharedPart } from './on-demand'
import { ExclusivePart } from './exclusive-part'
import type { Hold, HoldInit, LockMode } from './hold'
import { checkUserKey, checkOptions, MAX_KEY_LENGTH } from './validate'

// What locks.ts builds a lock's claim with, once this chunk is loaded.
export { claimOf, ExclusivePart }

/** Runs the wait of `claim` once the client is ready: the hold, or `null`. */
export async function take<H>(ctx: Context, claim: Claim<H>, o: Checked): Promise<H | null> {
  ctx.assertOpen()
  o.signal?.throwIfAborted()
  await ctx.ready
  return new AcquireMachine(ctx, claim, { wait: o.wait, signal: o.signal, steal: o.steal, inLine: o.inLine }).run()
}

/** A lease or an election's term: `key` held alone with `value`. */
export async function acquire<V extends Value, H extends Hold<V>>(
  ctx: Context,
  key: string,
  value: V,
  rawOptions: AcquireOptions | undefined,
  make: (init: HoldInit<V>) => H,
): Promise<H | null> {
  checkUserKey(key)
  const o = checkAcquire(ctx, checkOptions<AcquireOptions>(rawOptions))
  const part = new ExclusivePart(ctx, key, { value, ttl: o.ttl, autoRenew: o.autoRenew, make }, { lock: false })
  return take(ctx, claimOf(ctx, [part], { key, value: null }, ([h]) => h!), o)
}

/** The part that takes lock `key` in `mode` (shared parts load on first use). */
export async function lockPart<P>(ctx: Context, key: string, mode: LockMode, spec: HoldSpec<null, P>): Promise<Part<P>> {
  if (mode === 'exclusive') return new ExclusivePart(ctx, key, spec, { lock: true })
  const { SharedPart } = await sharedPart()
  if (SharedPart.keyLength(ctx, key) > MAX_KEY_LENGTH) {
    const room = MAX_KEY_LENGTH - (SharedPart.keyLength(ctx, key) - key.length)
    throw new InvalidArgumentError(`a shared lock's key must be at most ${room} UTF-16 code units with this client's id (its shared holds are kept under it), got ${key.length}`)
  }
  return new SharedPart(ctx, key, spec)
}
