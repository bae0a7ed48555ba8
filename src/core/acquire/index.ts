/**
 * Taking a hold: the one entry point behind `locks.acquire`, `leases.grant`,
 * `semaphores.acquire` and an election's campaign. It reads top to bottom:
 *
 * 1. **plan**: what is wanted becomes a claim (claim.ts) of one part per key
 *    (exclusive-part.ts, shared-part.ts, permit-part.ts): what one try
 *    checks and writes, all in one commit;
 * 2. **commit**: the acquire machine (machine.ts) sends the try; when
 *    something blocks it and the caller may wait, it stands in the key's
 *    line (line.ts) and waits for what blocks it to change (wait.ts), then
 *    tries again;
 * 3. **learn**: a failed try tells the claim what blocks it now; a won one
 *    becomes the handle — a `Lock`, `LockSet`, `Lease` or `Permit` (hold/) —
 *    carrying the token the store gave it.
 *
 * A plain try (`wait: 0`) does not queue and may take a free key before the
 * line does, unless the acquire asks to respect the line (`IN_LINE`). On a
 * store with gates (capability `gates`), one key held alone or shared goes
 * through its gate instead (gated.ts), which keeps the line itself. The
 * options were checked at the call (checks.ts), before this module loaded:
 * it is a chunk of its own with the whole lock family (shared locks,
 * permits, several keys) and an election's campaign, loaded on a client's
 * first acquire or campaign (../taking.ts): one request, not one per part.
 *
 * @module
 */
import type { Value } from '../contract/adapter'
import { InvalidArgumentError } from '../contract/errors'
import { PERMIT_PREFIX, slotPrefix } from '../contract/reserved'
import { MAX_KEY_LENGTH } from '../contract/validate'
import type { Context } from '../context'
import type { HoldInit, LockMode } from '../hold/hold'
import { Lease } from '../hold/lease'
import { Lock } from '../hold/lock'
import { LockSet } from '../hold/lock-set'
import { Permit } from '../hold/permit'
import type { Checked } from './checks'
import { claimOf, type Claim, type HoldSpec, type Part } from './claim'
import { ExclusivePart } from './exclusive-part'
import { PermitPart } from './permit-part'
import { SharedPart } from './shared-part'
import { acquireGated } from './gated'
import { AcquireMachine } from './machine'

/** What one acquire wants. */
export type Want<V extends Value = Value> =
  /** One lock. */
  | { kind: 'lock'; key: string; mode: LockMode }
  /** Several locks, all in one commit. */
  | { kind: 'locks'; keys: readonly string[]; mode: LockMode }
  /** A lease (or an election's term): `key` held alone with `value`; `won` is told of it the moment the commit is won. */
  | { kind: 'lease'; key: string; value: V; won?: (lease: Lease<V>) => void }
  /** One permit of a semaphore of `limit`. */
  | { kind: 'permit'; key: string; limit: number }


/** Takes what `want` names: the handle, or `null` when it is held elsewhere and the wait ran out. */
export function acquire(ctx: Context, want: Want & { kind: 'lock' }, o: Checked): Promise<Lock | null>
export function acquire(ctx: Context, want: Want & { kind: 'locks' }, o: Checked): Promise<LockSet | null>
export function acquire<V extends Value>(ctx: Context, want: Want<V> & { kind: 'lease' }, o: Checked): Promise<Lease<V> | null>
export function acquire(ctx: Context, want: Want & { kind: 'permit' }, o: Checked): Promise<Permit | null>
export async function acquire(ctx: Context, want: Want, o: Checked): Promise<unknown> {
  ctx.assertOpen()
  o.signal?.throwIfAborted()
  const claim = await plan(ctx, want, o)
  await ctx.ready
  // One key held alone or shared, on a store whose clients share a lock manager: through the key's gate.
  if ((want.kind === 'lock' || want.kind === 'lease') && ctx.adapter.capabilities?.gates && ctx.adapter.gate) {
    return acquireGated(ctx, claim, want.key, want.kind === 'lock' ? want.mode : 'exclusive', o)
  }
  const machine = new AcquireMachine(ctx, claim, { wait: o.wait, signal: o.signal, steal: o.steal, inLine: o.inLine })
  return machine.run()
}

/** The claim of `want`: its parts, how each makes its handle, and the line its waiters stand in. */
async function plan(ctx: Context, want: Want, o: Checked): Promise<Claim<unknown>> {
  const spec = <V extends Value, P>(value: V, make: (init: HoldInit<V>) => P): HoldSpec<V, P> => ({ value, ttl: o.ttl, autoRenew: o.autoRenew, make })
  const lockSpec = spec(null, (init) => new Lock(ctx, init))
  switch (want.kind) {
    case 'lock':
      return claimOf(ctx, [await lockPart(ctx, want.key, want.mode, lockSpec)], { key: want.key, value: want.mode }, ([h]) => h)
    case 'locks': {
      // Sorted, so that two multi-key commits of overlapping sets name their keys in one order.
      const order = [...want.keys].sort()
      const parts = await Promise.all(order.map((k) => lockPart(ctx, k, want.mode, lockSpec)))
      return claimOf(ctx, parts, undefined, (holds) => new LockSet(want.keys.map((k) => holds[order.indexOf(k)]!)))
    }
    case 'lease': {
      const { won } = want
      const make = (init: HoldInit<Value>) => {
        const lease = new Lease(ctx, init)
        won?.(lease)
        return lease
      }
      return claimOf(ctx, [new ExclusivePart(ctx, want.key, spec(want.value, make), { lock: false })], { key: want.key, value: null }, ([h]) => h)
    }
    case 'permit': {
      const { key, limit } = want
      if ((slotPrefix(key) + (limit - 1)).length > MAX_KEY_LENGTH) {
        const room = MAX_KEY_LENGTH - slotPrefix('').length - String(limit - 1).length
        throw new InvalidArgumentError(`a semaphore's key must leave room for its slots under it: at most ${room} UTF-16 code units with limit ${limit}, got ${key.length}`)
      }
      const part = new PermitPart(ctx, key, limit, spec(null, (init) => new Permit(ctx, init, limit)))
      return claimOf(ctx, [part], { key: PERMIT_PREFIX + key, value: 'permit' }, ([p]) => p)
    }
  }
}

/** The part that takes lock `key` in `mode`. */
async function lockPart<P>(ctx: Context, key: string, mode: LockMode, spec: HoldSpec<null, P>): Promise<Part<P>> {
  if (mode === 'exclusive') return new ExclusivePart(ctx, key, spec, { lock: true })
  if (SharedPart.keyLength(ctx, key) > MAX_KEY_LENGTH) {
    const room = MAX_KEY_LENGTH - (SharedPart.keyLength(ctx, key) - key.length)
    throw new InvalidArgumentError(`a shared lock's key must be at most ${room} UTF-16 code units with this client's id (its shared holds are kept under it), got ${key.length}`)
  }
  return new SharedPart(ctx, key, spec)
}
