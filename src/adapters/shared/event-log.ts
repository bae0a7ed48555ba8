/**
 * The watch hub of a store that lives in one process (memory, SQLite): a ring
 * of recent events for `fromRevision` replays, and the live subscribers.
 * Replay and registration happen in one synchronous step, so no event falls
 * between them; events are appended in commit order, so every subscriber sees
 * revision order with nothing lost or doubled.
 *
 * @module
 */
import type { Unsubscribe, WatchEvent, WatchSink } from '../../core/adapter'
import { CompactedError } from '../../core/errors'

interface Subscriber {
  prefix: string
  sink: WatchSink
}

export class EventLog {
  readonly #capacity: number
  #ring: WatchEvent[] = []
  #start = 0
  /** Every event at or below this revision has been dropped from the ring. */
  #compactedThrough: number
  #subscribers = new Set<Subscriber>()

  /** `compactedThrough`: the store's revision when the log starts empty (after a restart, say). */
  constructor(capacity: number, compactedThrough = 0) {
    this.#capacity = Math.max(1, capacity)
    this.#compactedThrough = compactedThrough
  }

  get watchers(): number {
    return this.#subscribers.size
  }

  append(event: WatchEvent): void {
    if (this.#ring.length - this.#start >= this.#capacity) {
      this.#compactedThrough = this.#ring[this.#start]!.revision
      this.#start++
      // Shift the array now and then rather than on every append.
      if (this.#start > this.#capacity) {
        this.#ring = this.#ring.slice(this.#start)
        this.#start = 0
      }
    }
    this.#ring.push(event)
    for (const s of this.#subscribers) if (event.key.startsWith(s.prefix)) deliver(s, event)
  }

  subscribe(prefix: string, sink: WatchSink, fromRevision?: number): Unsubscribe {
    const subscriber: Subscriber = { prefix, sink }
    if (fromRevision !== undefined) {
      if (fromRevision < this.#compactedThrough) {
        sink.error(
          new CompactedError(
            `watch from revision ${fromRevision}: history up to revision ${this.#compactedThrough} is gone; read the current state and watch from its revision`,
          ),
        )
        return () => {}
      }
      for (let i = this.#start; i < this.#ring.length; i++) {
        const event = this.#ring[i]!
        if (event.revision > fromRevision && event.key.startsWith(prefix)) deliver(subscriber, event)
      }
    }
    this.#subscribers.add(subscriber)
    return () => {
      this.#subscribers.delete(subscriber)
    }
  }

  /** Ends every subscription with `error` (the store is closing). */
  closeAll(error: Error): void {
    for (const s of this.#subscribers) s.sink.error(error)
    this.#subscribers.clear()
  }
}

function deliver(subscriber: Subscriber, event: WatchEvent): void {
  try {
    subscriber.sink.event(event)
  } catch {
    // A sink that throws must not break the commit that is delivering to it.
  }
}
