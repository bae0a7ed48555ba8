/**
 * What the parts of a client share: the adapter, the clock, the client's id
 * and the things it must end on `close()`. Internal.
 *
 * @module
 */
import type { Adapter } from './contract/adapter'
import type { Clock } from './time/clock'
import type { HoldEndedError } from './contract/errors'

/** Something a client ends when it closes (a watch, a hold, an election). */
export interface Closable {
  close(): Promise<unknown> | void
}

export interface Context {
  readonly adapter: Adapter
  readonly clock: Clock
  /** The client's id: the owner recorded on what it holds. */
  readonly id: string
  /** The default TTL in milliseconds. */
  readonly ttl: number
  /** Settles once the client is registered with the adapter (for `ownerGone`). */
  readonly ready: Promise<void>
  /** Holds and watches, ended by `close()`. */
  readonly open: Set<Closable>
  /**
   * Calls `fn` with a `ClosedError` when the client closes (at once if it is
   * closed); returns the function that unregisters it. A set of callbacks
   * rather than listeners on one AbortSignal, which Node warns about past 10.
   */
  onClose(fn: (reason: Error) => void): () => void
  /** Throws `ClosedError` once the client is closed. */
  assertOpen(): void
  /** A hold of this client ended other than by its holder: the client's `holdend` event, with this detail. */
  lost(detail: { key: string; token: number; reason: HoldEndedError }): void
}

/**
 * The margin a holder takes off its TTL for clock drift between it and the
 * store: 1% of the TTL plus 2 ms, as Redlock does.
 */
export function driftMargin(ttl: number): number {
  return ttl * 0.01 + 2
}
