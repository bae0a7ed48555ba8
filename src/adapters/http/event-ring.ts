/**
 * The recent events of an adapter's shared watch stream, so that a new watch
 * from a revision the stream has already passed (a lock waiter watching from
 * the entry that beat it) is served from memory, with no request.
 *
 * The ring is bounded in events and in bytes; `floor` says how far back it is
 * complete: it holds every event of the namespace with a revision above
 * `floor`, up to the newest the stream handed on.
 *
 * @module
 */
import type { WatchEvent } from '../../core/contract/adapter'

/** The stream's recent events, complete after `floor`, bounded in events and bytes. */
export class EventRing {
  readonly #maxEvents: number
  readonly #maxBytes: number
  #events: WatchEvent[] = []
  #sizes: number[] = []
  #start = 0
  #bytes = 0
  #floor: number | undefined

  constructor(maxEvents: number, maxBytes: number) {
    this.#maxEvents = Math.max(1, maxEvents)
    this.#maxBytes = maxBytes
  }

  /** Every event after this revision is here; undefined while that is not known. */
  get floor(): number | undefined {
    return this.#floor
  }

  /** Empties the ring; it is complete after `floor` (undefined: from its first event on). */
  reset(floor: number | undefined): void {
    this.#events = []
    this.#sizes = []
    this.#start = 0
    this.#bytes = 0
    this.#floor = floor
  }

  /** Appends the stream's next event (`size`: its length on the wire). */
  push(event: WatchEvent, size: number): void {
    // A stream that started at an unknown revision has missed nothing before its first event.
    if (this.#floor === undefined) this.#floor = event.revision - 1
    this.#events.push(event)
    this.#sizes.push(size)
    this.#bytes += size
    while (this.#events.length - this.#start > this.#maxEvents || (this.#bytes > this.#maxBytes && this.#events.length - this.#start > 1)) {
      this.#floor = this.#events[this.#start]!.revision
      this.#bytes -= this.#sizes[this.#start]!
      this.#start++
    }
    // Shift the arrays now and then rather than on every eviction.
    if (this.#start > this.#maxEvents) {
      this.#events = this.#events.slice(this.#start)
      this.#sizes = this.#sizes.slice(this.#start)
      this.#start = 0
    }
  }

  /** True if every event after revision `after` is here. */
  covers(after: number): boolean {
    return this.#floor !== undefined && after >= this.#floor
  }

  /** The events after revision `after`, oldest first. */
  since(after: number): WatchEvent[] {
    let lo = this.#start
    let hi = this.#events.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.#events[mid]!.revision > after) hi = mid
      else lo = mid + 1
    }
    return this.#events.slice(lo)
  }
}
