/**
 * A watch of the hub (`./watch-hub`) and how one whose revision is older
 * than what the stream can give catches up: the node's history, a page at a
 * time, up to where the stream's changes (held meanwhile) take over.
 *
 * @module
 */
import type { Unsubscribe, WatchEvent, WatchSink } from '../../core/contract/adapter'
import { UnavailableError } from '../../core/contract/errors'
import { pause } from './watch-stream'

/** One page of a node's history: complete for every revision up to `through`. */
export interface HistoryPage {
  events: WatchEvent[]
  through: number
  more: boolean
}

/** A `watch()` call waiting to be joined to the stream. */
export interface Joiner {
  readonly prefix: string
  readonly sink: WatchSink
  readonly from: number | undefined
  resolve(unsubscribe: Unsubscribe): void
  reject(error: Error): void
}

/** A watch joined to the stream. */
export interface Subscriber {
  readonly prefix: string
  readonly sink: WatchSink
  /** Changes at or below this revision are not delivered: had already, or older than the watch. */
  after: number
  /** While catching up on history: the stream's changes, kept for after it. */
  held: WatchEvent[] | undefined
  /** While catching up: fails the opening `watch()` instead of the sink. */
  fail: ((error: Error) => void) | undefined
  done: boolean
  /** Waiting for the stream to carry its prefix: the watch it completes. */
  waiting: Joiner | undefined
}

/** History requests that bring nothing new before a catch-up gives up. */
const MAX_STALLS = 5

/**
 * Delivers the node's history after `sub.after` until it reaches `floor`,
 * where the ring (and so `sub.held`) starts; undefined `floor`: the stream
 * had brought nothing yet, so all of it is held and any history will do.
 */
export async function catchUp(ctx: { history(prefix: string, after: number, epoch: string | undefined): Promise<HistoryPage> }, sub: Subscriber, floor: number | undefined, epoch: string | undefined, first?: HistoryPage & { after: number }): Promise<void> {
  let stalls = 0
  // A page that came with the filter answer, if it starts early enough for this watch.
  let given = first && first.after <= sub.after ? first : undefined
  for (;;) {
    const page = given ?? (await ctx.history(sub.prefix, sub.after, epoch))
    given = undefined
    if (sub.done) return
    for (const event of page.events) if (event.revision > sub.after && event.key.startsWith(sub.prefix)) deliver(sub.sink, event)
    const progressed = page.through > sub.after
    sub.after = Math.max(sub.after, page.through)
    if (floor === undefined || sub.after >= floor) return
    if (page.more) continue
    // A node behind the stream (another address that has not caught up): ask again shortly.
    if (!progressed && ++stalls >= MAX_STALLS) {
      throw new UnavailableError(`the node's history stops at revision ${sub.after}, before the watch stream's ${floor}`)
    }
    await pause(50 * stalls, new AbortController().signal)
    if (sub.done) return
  }
}

/** Hands `event` to `sink`; a sink that throws must not end the stream for the events after it. */
export function deliver(sink: WatchSink, event: WatchEvent): void {
  try {
    sink.event(event)
  } catch {
    // A sink that throws must not end the stream for the events after it.
  }
}
