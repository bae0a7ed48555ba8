/**
 * A take that waits at the store (the acquire machine's `park` state,
 * machine.ts): what the wait for its answer must keep, the Node process
 * alive among it (as every wait of a client does). Never a second try
 * while this one is out: on the caller's abort or the client's close, the
 * waiter leaves the line — its place is a check of the take, so the store
 * can no longer let the take through — and waits for the answer; a hold the
 * take won before that is let go.
 *
 * @module
 */
import type { Context } from '../context'
import { keepAlive } from '../time/keep-alive'
import type { TryResult } from './claim'
import type { Sight } from './wait'

/** What the waiting take does to the line: leave it (stopped), or leave it to a take that deleted its place (won). */
export interface ParkedLine {
  leave(): void
  taken(): void
}

/** Awaits `trying`; throws the reason of an abort or close that came meanwhile, having let go of what it won. */
export async function awaitParked<H>(ctx: Context, signal: AbortSignal | undefined, line: ParkedLine, trying: Promise<TryResult<H>>): Promise<TryResult<H>> {
  let stopped: { reason: unknown } | undefined
  const off: Array<() => void> = []
  const stop = (reason: unknown) => {
    if (stopped) return
    stopped = { reason }
    line.leave()
  }
  if (signal) {
    const onAbort = () => stop(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    off.push(() => signal.removeEventListener('abort', onAbort))
  }
  off.push(ctx.onClose(stop))
  // A take parked in this process's own store (memory) has no socket to keep Node alive while it waits.
  off.push(keepAlive())
  let r: TryResult<H>
  try {
    r = await trying
  } catch (err) {
    if (stopped) throw stopped.reason
    throw err
  } finally {
    for (const f of off) f()
  }
  if (stopped) {
    if ('hold' in r) {
      line.taken()
      await letGo(r.hold)
    }
    throw stopped.reason
  }
  return r
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
