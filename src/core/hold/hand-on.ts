/**
 * The release of a hold taken through a gate (capability `gates`). Its gate
 * goes first: the next client in line is granted it at once and takes the
 * key over this hold's entry in its own take (a new life: this hold's token
 * dies). When someone holds or waits for the gate, the release therefore
 * writes nothing — a delete of its own would only queue in the store ahead
 * of that take — and waits until the key shows a change after this hold's
 * last write; when nobody is there, or nothing shows within
 * {@link HAND_ON_WAIT} (the waiter gave up meanwhile), it deletes its entry
 * as any release does.
 *
 * @module
 */
import type { Adapter, CommitResult, Gate } from '../contract/adapter'
import type { Clock } from '../time/clock'
import type { Life } from './life'

/** How long a release that left its key to the next in line waits to see it taken, in ms, before it deletes its entry itself. */
export const HAND_ON_WAIT = 1_000

/**
 * Lets `gate` go and leaves the key to the next holder of the gate: resolves
 * `undefined` once the key changed after `revision`, else what `free` (the
 * release's delete) answered.
 */
export async function handOn(adapter: Adapter, clock: Clock, gate: Gate, life: Life, revision: number, free: () => Promise<CommitResult>): Promise<CommitResult | undefined> {
  gate.release()
  if (!(await gate.taken())) return free()
  const changed = await new Promise<boolean>((resolve) => {
    // Harmless twice: the timer and the watch are ended again, the promise settled already.
    const done = (seen: boolean) => {
      clock.clearTimeout(timer)
      unwatch()
      resolve(seen)
    }
    const timer = clock.setTimeout(() => done(false), HAND_ON_WAIT)
    const unwatch = life.watch(adapter, revision, (ev) => ev.key === life.entryKey && done(true), () => done(false))
  })
  return changed ? undefined : free()
}
