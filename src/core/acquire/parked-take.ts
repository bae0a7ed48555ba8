/**
 * A take that waits at the store (the acquire machine's `park` state,
 * machine.ts): what the wait for its answer must keep. Never a second try
 * while this one is out: on the caller's abort or the client's close, the
 * waiter leaves the line — its place is a check of the take, so the store
 * can no longer let the take through — and gives up at once; a hold the
 * take won before that is let go when its answer comes.
 *
 * @module
 */
import type { Context } from '../context'
import type { TryResult } from './claim'
import type { Sight } from './wait'

/** What the waiting take does to the line: leave it (stopped), or leave it to a take that deleted its place (won). */
export interface ParkedLine {
  /** `closing`: the client closes (its store ends the parked take itself, see WaitQueue.leave). */
  leave(closing?: boolean): void
  taken(): void
  /** The take is answered (after a leave): what the leave wrote meanwhile may go. */
  answered(): void
}

/**
 * Awaits `trying`. An abort or close that comes meanwhile rejects at once
 * with its reason, having left the line; the take's answer is dealt with
 * when it comes: a hold it won is let go. (A leave that landed between a
 * join-park's place and its park leaves the take parked, never to go
 * through, until its wait ends: the caller need not wait for that.)
 */
export function awaitParked<H>(ctx: Context, signal: AbortSignal | undefined, line: ParkedLine, trying: Promise<TryResult<H>>): Promise<TryResult<H>> {
  return new Promise<TryResult<H>>((resolve, reject) => {
    let stopped = false
    const off: Array<() => void> = []
    const unlisten = () => {
      for (const f of off) f()
    }
    const stop = (reason: unknown, closing = false) => {
      if (stopped) return
      stopped = true
      unlisten()
      line.leave(closing)
      reject(reason)
    }
    if (signal) {
      const onAbort = () => stop(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      off.push(() => signal.removeEventListener('abort', onAbort))
    }
    off.push(ctx.onClose((reason) => stop(reason, true)))
    trying.then(
      (r) => {
        if (!stopped) {
          unlisten()
          return resolve(r)
        }
        line.answered()
        if ('hold' in r) {
          line.taken()
          void letGo(r.hold)
        }
      },
      (err: unknown) => {
        if (!stopped) {
          unlisten()
          return reject(err)
        }
        line.answered()
      },
    )
  })
}

/** Whether two sights show the very same blockers (same keys, same revisions). */
export function sameBlockers(a: Sight, b: Sight): boolean {
  if (a.blockers.length !== b.blockers.length) return false
  return a.blockers.every((e, i) => e.key === b.blockers[i]!.key && e.revision === b.blockers[i]!.revision)
}

/** Releases a hold won by a try whose acquire had given up meanwhile (best effort: it expires otherwise). */
async function letGo(hold: unknown): Promise<void> {
  await (hold as { release?: () => Promise<unknown> }).release?.().catch(() => {})
}
