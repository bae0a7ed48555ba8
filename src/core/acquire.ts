/**
 * Taking a hold: the procedures behind `locks.acquire`, `leases.grant`,
 * elections and `semaphores.acquire`. Each checks its options at the call,
 * builds the claim of what it takes (claim.ts and its parts) and runs the
 * acquire machine (acquire-machine.ts), which waits in line when asked to.
 * A plain try (`wait: 0`) does not queue and may take a free key before the
 * line does — unless the acquire asks to respect the line ({@link IN_LINE}).
 *
 * @module
 */
import type { Value } from './adapter'
import { AcquireMachine } from './acquire-machine'
import { claimOf, type Claim, type HoldSpec, type Part } from './claim'
import type { Context } from './context'
import { InvalidArgumentError } from './errors'
import { sharedPart } from './on-demand'
import { ExclusivePart } from './exclusive-part'
import type { Hold, HoldInit, LockMode } from './hold'
import { checkBoolean, checkUserKey, checkOptions, checkSignal, checkTtl, checkWait, MAX_KEY_LENGTH } from './validate'

/** Options shared by `locks.acquire`, `leases.grant` and `semaphores.acquire`. */
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
   * at once: its fenced writes fail and its renewals report the loss. With
   * a lock held in shared mode, every shared holder's token dies.
   */
  steal?: boolean
}

/**
 * An internal option of `locks.acquire` (zaris/web-locks asks for the Web
 * Locks API's grant order with it): `{ [IN_LINE]: { onQueued } }` makes
 * the acquire respect the line — its first try is made only when nobody
 * waits in line, else it joins, or gives up with no time to wait — and
 * calls `onQueued` once its place in line is written. Keyed by a
 * registered symbol, so that it is no public option and cannot clash with one.
 *
 * @internal
 */
export const IN_LINE: unique symbol = Symbol.for('zaris.acquire.inLine')

/** The value of the {@link IN_LINE} option. @internal */
export interface InLine {
  /** Called once when the acquire starts to wait: its place in line is written. */
  onQueued?: () => void
}

/** Options checked, with their defaults. */
export interface Checked {
  ttl: number
  wait: number
  signal: AbortSignal | undefined
  autoRenew: boolean
  steal: boolean
  /** Respect the line ({@link IN_LINE}). */
  inLine: InLine | undefined
}

/** Checks the options every acquire takes (`InvalidArgumentError` naming the one that is wrong). */
export function checkAcquire(ctx: Context, options: AcquireOptions): Checked {
  return {
    ttl: options.ttl === undefined ? ctx.ttl : checkTtl(options.ttl),
    wait: options.wait === undefined ? 0 : checkWait(options.wait),
    signal: checkSignal(options.signal),
    autoRenew: checkBoolean(options.autoRenew, 'autoRenew') ?? true,
    steal: checkBoolean(options.steal, 'steal') ?? false,
    inLine: (options as { [IN_LINE]?: InLine })[IN_LINE],
  }
}

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

/** The most keys one multi-key acquire takes (one commit writes them all). */
export const MAX_LOCK_KEYS = 64

/** Checks a lock mode. */
export function checkMode(mode: unknown): LockMode {
  if (mode === undefined || mode === 'exclusive') return 'exclusive'
  if (mode === 'shared') return 'shared'
  throw new InvalidArgumentError(`mode must be 'exclusive' or 'shared', got ${typeof mode === 'string' ? JSON.stringify(mode) : typeof mode}`)
}

/** Checks the keys of a multi-key acquire: 1 to {@link MAX_LOCK_KEYS} user keys, none twice. */
export function checkKeys(keys: readonly unknown[]): string[] {
  if (keys.length === 0 || keys.length > MAX_LOCK_KEYS) {
    throw new InvalidArgumentError(`keys must hold 1 to ${MAX_LOCK_KEYS} lock keys, got ${keys.length}`)
  }
  const seen = new Set<string>()
  keys.forEach((k, i) => {
    checkUserKey(k, `keys[${i}]`)
    if (seen.has(k as string)) throw new InvalidArgumentError(`keys[${i}] ${JSON.stringify(k)} appears twice`)
    seen.add(k as string)
  })
  return keys as string[]
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
