/**
 * Why a hold ended, as the `reason` of its signal: one place that turns what
 * the store has at the hold's key (or an event of it) into a
 * {@link HoldEndedError}, so renewals, releases, fenced writes and watches
 * all name the same thing the same way.
 *
 * - `STOLEN`: the key now carries another life that has an owner (a steal,
 *   or another holder that took it since).
 * - `LOST`: the key carries an ownerless life (a plain put), or nothing
 *   before the holder's deadline (a delete, or a store that lost its state).
 * - `EXPIRED`: nothing at or after the holder's deadline, or an `expire` event.
 *
 * @module
 */
import type { Entry, WatchEvent } from '../contract/adapter'
import { HoldEndedError } from '../contract/errors'

/** Describes the hold in messages: `the hold on "lock:a" (token 12)`. */
export function holdName(key: string, token: number): string {
  return `the hold on ${JSON.stringify(key)} (token ${token})`
}

/** The end of hold `what`, from the entry the store has at its key instead of its token; `due`: its deadline has passed. */
export function endFromEntry(what: string, entry: Entry | undefined, due: boolean): HoldEndedError {
  if (!entry) {
    return due
      ? new HoldEndedError('EXPIRED', `${what} expired: its TTL ran out`)
      : new HoldEndedError('LOST', `${what} is gone from the store: deleted by another writer, or lost with the store's state`)
  }
  return overwritten(what, entry)
}

/**
 * The end of hold `what`, from an event of its key that is not its own
 * renewal. No deadline is needed: a put names who wrote, and a delete or an
 * expiry says which it is.
 */
export function endFromEvent(what: string, ev: WatchEvent): HoldEndedError {
  if (ev.type === 'put') return overwritten(what, ev)
  return ev.type === 'expire'
    ? new HoldEndedError('EXPIRED', `${what} expired in the store`)
    : new HoldEndedError('LOST', `${what} was deleted by another writer`)
}

/** The key carries another life, written by `by` (an entry, or the put event of it): who wrote it decides. */
function overwritten(what: string, by: { owner?: string; created?: number; revision: number }): HoldEndedError {
  return by.owner !== undefined
    ? new HoldEndedError('STOLEN', `${what} was taken over by ${by.owner} (token ${by.created ?? by.revision})`)
    : new HoldEndedError('LOST', `${what} was overwritten by a plain write (the key now has no owner, token ${by.created ?? by.revision})`)
}

/** The end of hold `what` at its holder's deadline. */
export function endAtDeadline(what: string): HoldEndedError {
  return new HoldEndedError('EXPIRED', `${what} expired: its TTL passed without a successful renewal`)
}

/** The end of hold `what` that its holder let go, confirmed by the store (or not answered). */
export function endByHolder(what: string, reason: 'RELEASED' | 'CLOSED'): HoldEndedError {
  return new HoldEndedError(reason, `${what} was ${reason === 'CLOSED' ? 'ended by client.close()' : 'released'}`)
}

/** The end of hold `what` whose gate another client took (capability `gates`): a steal, or a waiter's takeover of a holder frozen past its TTL. */
export function endByGate(what: string): HoldEndedError {
  return new HoldEndedError('STOLEN', `${what} was taken over: another client took its gate`)
}
