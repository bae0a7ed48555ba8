/**
 * The watch feed of one adapter: its subscribers, each with a cursor (the
 * last revision it has seen), fed from three sources — this adapter's own
 * commits, other tabs' commits announced over BroadcastChannel, and the
 * change log in IndexedDB.
 *
 * Announcements may arrive out of revision order (two tabs commit at once)
 * or not at all (a frozen tab). A record is handed to a subscriber only if
 * it is the very next revision after its cursor; anything else sends the
 * feed to the log, which holds every revision, to read from the lowest
 * cursor. Since every announced revision was committed before it was
 * announced, and readwrite transactions serialize, the log then holds every
 * revision up to it. So each subscriber sees revision order, none lost or
 * doubled.
 *
 * @module
 */
import type { Unsubscribe, Value, WatchEvent, WatchSink } from '../../core/adapter'
import { CompactedError } from '../../core/errors'
import type { LogRecord } from './schema'

interface Subscriber {
  prefix: string
  sink: WatchSink
  cursor: number
}

/** How the feed reads the store: the revision and the log after a revision. */
export interface FeedSource {
  revision(): Promise<number>
  log(after: number): Promise<{ revision: number; records: LogRecord[] }>
  /** How many revisions the log keeps. */
  historySize: number
}

export class Feed {
  readonly #source: FeedSource
  readonly #subscribers = new Set<Subscriber>()
  /** The highest revision known to be committed. */
  #known = 0
  #pumping = false
  #again = false

  constructor(source: FeedSource) {
    this.#source = source
  }

  get size(): number {
    return this.#subscribers.size
  }

  /** Subscribes from `fromRevision`, or from the store's current revision. */
  async subscribe(prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe> {
    const revision = await this.#source.revision()
    this.#known = Math.max(this.#known, revision)
    const compacted = Math.max(0, revision - this.#source.historySize)
    if (fromRevision !== undefined && fromRevision < compacted) {
      sink.error(
        new CompactedError(
          `watch from revision ${fromRevision}: history up to revision ${compacted} is gone; read the current state and watch from its revision`,
        ),
      )
      return () => {}
    }
    const subscriber: Subscriber = { prefix, sink, cursor: fromRevision ?? revision }
    this.#subscribers.add(subscriber)
    if (subscriber.cursor < this.#known) this.#pump()
    return () => {
      this.#subscribers.delete(subscriber)
    }
  }

  /** Records of consecutive revisions, committed by this tab or announced by another. */
  receive(records: LogRecord[]): void {
    if (records.length === 0) return
    this.#known = Math.max(this.#known, records[records.length - 1]!.revision)
    if (this.#subscribers.size === 0) return
    let behind = false
    for (const s of this.#subscribers) {
      for (const record of records) {
        if (record.revision === s.cursor + 1) this.#deliver(s, record)
      }
      if (s.cursor < this.#known) behind = true
    }
    if (behind) this.#pump()
  }

  /** Looks at the store for revisions nobody announced (after a freeze, say). */
  poll(): void {
    if (this.#subscribers.size > 0) this.#pump(true)
  }

  /** Ends every subscription without an error (the adapter is closing). */
  clear(): void {
    this.#subscribers.clear()
  }

  /** Reads the log from the lowest cursor until every subscriber has caught up with what is known. */
  #pump(force = false): void {
    if (this.#pumping) {
      this.#again = true
      return
    }
    this.#pumping = true
    void (async () => {
      try {
        do {
          this.#again = false
          let lowest = Infinity
          for (const s of this.#subscribers) lowest = Math.min(lowest, s.cursor)
          if (lowest === Infinity || (!force && lowest >= this.#known)) continue
          force = false
          const { revision, records } = await this.#source.log(lowest)
          this.#known = Math.max(this.#known, revision)
          const compacted = Math.max(0, revision - this.#source.historySize)
          for (const s of this.#subscribers) {
            if (s.cursor < compacted) {
              this.#subscribers.delete(s)
              s.sink.error(new CompactedError(`watch fell behind: history up to revision ${compacted} is gone`))
              continue
            }
            for (const record of records) if (record.revision > s.cursor) this.#deliver(s, record)
            // The read saw every revision up to `revision`, empty ones included.
            s.cursor = Math.max(s.cursor, revision)
          }
        } while (this.#again)
      } catch {
        // The database went away (closed, deleted): nothing more to deliver.
      } finally {
        this.#pumping = false
      }
    })()
  }

  #deliver(s: Subscriber, record: LogRecord): void {
    s.cursor = record.revision
    for (const event of record.events) {
      if (!event.key.startsWith(s.prefix)) continue
      try {
        s.sink.event(copyEvent(event))
      } catch {
        // A sink that throws must not stop delivery to the others.
      }
    }
  }
}

function copyEvent(event: WatchEvent): WatchEvent {
  const value = event.value as Value | undefined
  if (typeof value !== 'object' || value === null) return { ...event }
  return { ...event, value: structuredClone(value) }
}
