/**
 * The watch feed of one page (per namespace): every revision of the store,
 * in order, handed to the page's watchers. Records come from the page's own
 * commits and from other tabs' announcements over BroadcastChannel; the
 * change log in IndexedDB fills what is missing.
 *
 * The feed keeps `head`, the revision up to which it has every record, and a
 * ring of the latest records so that a watch from a recent revision replays
 * from memory. Announcements may arrive out of revision order (two tabs
 * commit at once): a record beyond `head + 1` waits in `pending` while the
 * log is read from `head`. Every announced revision was committed before it
 * was announced, and readwrite transactions serialize, so the log then holds
 * every revision up to it. Each watcher therefore sees revision order, none
 * lost or doubled.
 *
 * @module
 */
import type { Unsubscribe, WatchEvent, WatchSink } from '../../core/contract/adapter'
import { CompactedError } from '../../core/contract/errors'
import type { LogRecord } from './schema'

interface Subscriber {
  prefix: string
  sink: WatchSink
  /** The last revision this subscriber has been handed. */
  cursor: number
  closed?: boolean
}

/** How the feed reads the store. */
export interface FeedSource {
  /** The store's revision and every log record after `after`, read together. */
  log(after: number): Promise<{ revision: number; records: LogRecord[] }>
  /** How many revisions the log keeps. */
  historySize: number
}

const RING = 2_000

export class Feed {
  readonly #source: FeedSource
  readonly #subscribers = new Set<Subscriber>()
  #head = -1
  #ring: LogRecord[] = []
  #pending = new Map<number, LogRecord>()
  #started: Promise<void> | undefined
  #filling = false
  #fillAgain = false

  constructor(source: FeedSource) {
    this.#source = source
  }

  /** Learns the store's revision: the feed has every record after it. */
  start(): Promise<void> {
    this.#started ??= this.#source.log(Infinity).then(({ revision }) => {
      this.#head = Math.max(this.#head, revision)
      this.#drain()
    })
    this.#started.catch(() => (this.#started = undefined))
    return this.#started
  }

  /** The revision up to which this page has seen every record. */
  get head(): number {
    return this.#head
  }

  /** Subscribes from `fromRevision`, or from now. */
  async subscribe(prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe> {
    await this.start()
    const subscriber: Subscriber = { prefix, sink, cursor: fromRevision ?? this.#head }
    const remove = () => {
      subscriber.closed = true
      this.#subscribers.delete(subscriber)
    }
    if (subscriber.cursor >= this.#oldest()) {
      this.#replay(subscriber)
      this.#subscribers.add(subscriber)
      return remove
    }
    // Older than the ring: read the log, then take the rest from the ring.
    for (;;) {
      const { revision, records } = await this.#source.log(subscriber.cursor)
      const compacted = Math.max(0, revision - this.#source.historySize)
      if (subscriber.cursor < compacted) {
        sink.error(
          new CompactedError(
            `watch from revision ${subscriber.cursor}: history up to revision ${compacted} is gone; read the current state and watch from its revision`,
          ),
        )
        return () => {}
      }
      // The log from the cursor on, without a gap: what it holds past `head` is committed too, and never handed twice.
      for (const record of records) this.#deliver(subscriber, record)
      // The ring moved past what the log read covered: read again from where we are.
      if (subscriber.cursor < this.#oldest()) continue
      this.#replay(subscriber)
      this.#subscribers.add(subscriber)
      return remove
    }
  }

  /** Records committed by this page or announced by another tab, in any order. */
  receive(records: LogRecord[]): void {
    for (const r of records) this.#pending.set(r.revision, r)
    this.#drain()
  }

  /** Looks at the log for revisions nobody announced (after the page was frozen, say). */
  poll(): void {
    this.#fill(true)
  }

  /** Ends every subscription quietly (the store is closing). */
  clear(): void {
    for (const s of this.#subscribers) s.closed = true
    this.#subscribers.clear()
  }

  /** The lowest revision a subscriber can start from without the log. */
  #oldest(): number {
    const ring = this.#ring.length > 0 ? this.#ring[0]!.revision - 1 : this.#head
    // Memory may hold more than the log keeps; promise no more than the log does, in every tab alike.
    return Math.max(ring, this.#head - this.#source.historySize)
  }

  #replay(s: Subscriber): void {
    for (const record of this.#ring) if (record.revision === s.cursor + 1) this.#deliver(s, record)
    // Nothing between the cursor and head is missing from the ring, so the cursor is at head now.
    s.cursor = Math.max(s.cursor, this.#head)
  }

  /** Hands on what follows `head` without a gap, drops what it has had, and reads the log for a gap (not before `start`). */
  #drain(): void {
    for (;;) {
      const next = this.#pending.get(this.#head + 1)
      if (!next) break
      this.#pending.delete(next.revision)
      this.#append(next)
    }
    for (const rev of this.#pending.keys()) if (rev <= this.#head) this.#pending.delete(rev)
    if (this.#pending.size > 0) this.#fill(false)
  }

  #append(record: LogRecord): void {
    this.#head = record.revision
    this.#ring.push(record)
    if (this.#ring.length > RING * 2) this.#ring = this.#ring.slice(-RING)
    for (const s of this.#subscribers) if (record.revision === s.cursor + 1) this.#deliver(s, record)
  }

  /** Reads the log from `head` until nothing pending is beyond it. */
  #fill(force: boolean): void {
    if (this.#head < 0) return
    if (this.#filling) {
      this.#fillAgain = true
      return
    }
    this.#filling = true
    void (async () => {
      try {
        do {
          this.#fillAgain = false
          if (!force && this.#pending.size === 0) break
          force = false
          const { revision, records } = await this.#source.log(this.#head)
          const compacted = Math.max(0, revision - this.#source.historySize)
          if (this.#head < compacted) {
            // This page slept through more history than the log keeps: watchers must start over.
            const behind = [...this.#subscribers]
            this.clear()
            for (const s of behind) s.sink.error(new CompactedError(`watch fell behind: history up to revision ${compacted} is gone`))
            this.#ring = []
            this.#head = revision
            this.#pending.clear()
            continue
          }
          for (const r of records) this.#pending.set(r.revision, r)
          this.#drain()
        } while (this.#fillAgain)
      } catch {
        // The database went away (closed, deleted): nothing more to deliver.
      } finally {
        this.#filling = false
      }
    })()
  }

  #deliver(s: Subscriber, record: LogRecord): void {
    s.cursor = record.revision
    for (const event of record.events) {
      if (s.closed) return
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
  return 'value' in event ? { ...event, value: structuredClone(event.value) } : { ...event }
}
