/**
 * What an acquire checks at the call, before the acquire machinery
 * (acquire/index.ts, a chunk loaded on first use) is needed: the options every
 * acquire takes, a lock's mode and a multi-key acquire's keys, each failing
 * with an `InvalidArgumentError` that names what is wrong.
 *
 * @module
 */
import type { Context } from '../context'
import { InvalidArgumentError } from '../contract/errors'
import type { LockMode } from '../hold/hold'
import { checkBoolean, checkUserKey, checkSignal, checkTtl, checkWait } from '../contract/validate'

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

