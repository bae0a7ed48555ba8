/**
 * Watch delivery of the Redis adapter: one reader per adapter follows the
 * namespace's log (a Redis Stream) with `XREAD BLOCK` on a connection of its
 * own, and hands each event to the subscribers whose prefix it matches.
 *
 * A new subscriber whose start (its `fromRevision`, or the revision current
 * when it subscribed) lies within the recent entries the reader keeps in
 * memory is served from them and joins at once, with no round trip (the
 * common case: a lock waiter watching from the revision that beat it).
 * Otherwise it catches up on its own with `XRANGE` until it is level with
 * the reader, then joins. Each subscriber keeps its own cursor, so nothing
 * falls between catch-up and joining and nothing comes twice.
 *
 * Gaps are detected, never papered over: every revision has at least one log
 * entry and the last one of a revision is marked, so the entry after a cursor
 * is known exactly. When the log was trimmed past a cursor (a subscriber asked
 * for old history, or the reader fell behind), or the store's revision went
 * back, its epoch changed or it logged lost history (Redis lost data), the
 * subscribers concerned get a `CompactedError`.
 * A dropped connection is not a gap: the reader resumes from its cursor.
 *
 * @module
 */
import type { Unsubscribe, WatchSink } from '../../core/contract/adapter'
import { CompactedError } from '../../core/contract/errors'
import { decodeLogEntry, type LogEntry, type RawLogEntry, type StreamId } from './codec'

/** Where a subscriber or the reader stands: the last log entry consumed. */
interface Cursor extends StreamId {
  /** That entry was the last of its revision. */
  last: boolean
}

interface Reader {
  cursor: Cursor
  generation: number
  /** The store's epoch ('' until it has one): an entry of another epoch means Redis lost everything. */
  epoch: string
  /** The last entries read, contiguous; `base` is the position just before the first. */
  ring: LogEntry[]
  base: Cursor
  /** When the last subscriber left (0 while there are some). */
  idleSince: number
}

interface Subscriber {
  prefix: string
  sink: WatchSink
  cursor: Cursor
  /** Events at or below this revision are not delivered (a `fromRevision` beyond the store's head). */
  after: number
  done: boolean
}

/** What the follower needs from the adapter. */
export interface FollowerIo {
  /** The store's revision and epoch, and up to `count` log entries from `startId` (inclusive; '' for none), in one atomic step. */
  replay(startId: string, count: number): Promise<{ revision: number; epoch: string; entries: RawLogEntry[] }>
  /** Log entries after `afterId`, waiting up to `blockMs`; null when none came. Runs on the reader's connection. */
  read(afterId: string, count: number, blockMs: number): Promise<RawLogEntry[] | null>
  /** The store's revision, read on the reader's connection. */
  revision(): Promise<number>
  /** Every entry the reader sees (for the adapter's expiry timer and highest seen revision). */
  saw(entry: LogEntry): void
  /** Called with true when the first subscriber arrives, false when the last one leaves. */
  active(active: boolean): void
}

/** Entries per XRANGE / XREAD. */
const BATCH = 500
/** Recent entries the reader keeps, so a new subscriber can start from them without a round trip. */
const RING = 4_096
/** How long the reader keeps reading after its last subscriber left, for the next one. */
const LINGER_MS = 2_000
/** How long one XREAD blocks; a quiet stream is checked for a lost revision this often. */
const BLOCK_MS = 5_000
/** The highest sequence number a stream id can have: `r-MAX_SEQ` is "after every event of revision r". */
const MAX_SEQ = '18446744073709551615'

export class Follower {
  readonly #io: FollowerIo
  readonly #subscribers = new Set<Subscriber>()
  /** Subscribers that follow the reader (the rest are still catching up). */
  readonly #live = new Set<Subscriber>()
  #reader: Reader | undefined
  #generation = 0
  #closed = false

  constructor(io: FollowerIo) {
    this.#io = io
  }

  /** How many subscribers there are. */
  get size(): number {
    return this.#subscribers.size
  }

  async subscribe(prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe> {
    const sub: Subscriber = { prefix, sink, cursor: { rev: fromRevision ?? 0, seq: 0, last: true }, after: fromRevision ?? -1, done: false }
    this.#subscribers.add(sub)
    if (this.#subscribers.size === 1) this.#io.active(true)
    try {
      if (fromRevision === undefined) {
        const { revision } = await this.#io.replay('', 0)
        sub.cursor = { rev: revision, seq: 0, last: true }
        sub.after = revision
      }
      if (!sub.done && !this.#joinFromRing(sub)) await this.#catchUp(sub)
    } catch (err) {
      this.#drop(sub)
      throw err
    }
    return () => this.#drop(sub)
  }

  /** Ends every subscription without a word (the adapter is closing). */
  /** The reader's connection dropped: each watch is told (`WatchSink.reconnecting`); its reads resume from their cursors. */
  reconnecting(): void {
    for (const s of this.#subscribers) s.sink.reconnecting?.()
  }

  close(): void {
    this.#closed = true
    for (const sub of this.#subscribers) sub.done = true
    this.#subscribers.clear()
    this.#live.clear()
    this.#reader = undefined
  }

  /** Joins the reader at once if it has every entry after the subscriber's cursor in memory (or the cursor is ahead of it). */
  #joinFromRing(sub: Subscriber): boolean {
    const reader = this.#reader
    if (!reader || compareCursors(sub.cursor, reader.base) < 0) return false
    for (const entry of reader.ring) if (isAfter(entry.id, sub.cursor)) this.#deliver(sub, entry)
    this.#live.add(sub)
    return true
  }

  async #catchUp(sub: Subscriber): Promise<void> {
    for (;;) {
      const { revision, epoch, entries } = await this.#io.replay(startOf(sub.cursor), BATCH)
      if (sub.done) return
      const decoded = entries.map(decodeLogEntry)
      if (decoded.length === 0 && sub.cursor.last && sub.cursor.rev > revision) {
        // Asked for revisions the store has not reached: wait for them from its head.
        sub.cursor = { rev: revision, seq: 0, last: true }
      } else if (missing(sub.cursor, decoded, revision)) {
        return this.#fail(
          sub,
          new CompactedError(
            `watch from revision ${sub.cursor.rev}: the store no longer keeps the events after it (it keeps the most recent ones only); read the current state and watch from its revision`,
          ),
        )
      }
      for (const entry of decoded) {
        if (entry.lost !== undefined) return this.#fail(sub, new CompactedError(lostMessage(entry.lost)))
        this.#deliver(sub, entry)
      }
      if (decoded.length === BATCH) continue
      const reader = this.#reader
      // The reader may have read past this subscriber while the replay was on its way; read up to it first.
      if (reader && compareCursors(sub.cursor, reader.cursor) < 0) {
        if (this.#joinFromRing(sub)) return
        continue
      }
      this.#live.add(sub)
      if (!reader) this.#start(sub.cursor, epoch)
      return
    }
  }

  #start(cursor: Cursor, epoch: string): void {
    const generation = ++this.#generation
    this.#reader = { cursor: { ...cursor }, generation, epoch, ring: [], base: { ...cursor }, idleSince: 0 }
    void this.#follow(generation)
  }

  async #follow(generation: number): Promise<void> {
    let failures = 0
    for (;;) {
      const reader = this.#reader
      if (this.#closed || reader?.generation !== generation) return
      if (this.#subscribers.size > 0) reader.idleSince = 0
      else {
        if (reader.idleSince === 0) reader.idleSince = Date.now()
        else if (Date.now() - reader.idleSince >= LINGER_MS) {
          this.#reader = undefined
          return
        }
      }
      let raw: RawLogEntry[] | null
      try {
        raw = await this.#io.read(afterOf(reader.cursor), BATCH, BLOCK_MS)
        failures = 0
      } catch {
        // The connection reconnects by itself and the next read resumes from the cursor: no gap.
        failures++
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 50 * failures)))
        continue
      }
      if (this.#reader?.generation !== generation) return
      if (raw === null || raw.length === 0) {
        await this.#checkRevision(generation)
        continue
      }
      const entries = raw.map(decodeLogEntry)
      if (!follows(reader.cursor, entries[0]!.id)) {
        return this.#failReader(
          `the watch fell behind: the store dropped the events after revision ${reader.cursor.rev} before they were read (it keeps the most recent ones only); read the current state and watch again from its revision`,
        )
      }
      for (const entry of entries) {
        if (reader.epoch === '') reader.epoch = entry.epoch
        if (entry.lost !== undefined) return this.#failReader(lostMessage(entry.lost))
        if (entry.epoch !== reader.epoch) {
          return this.#failReader(
            `the store started over (Redis lost its data: restarted without persistence, or flushed); read the current state and watch again`,
          )
        }
        reader.cursor = cursorOf(entry)
        remember(reader, entry)
        for (const sub of this.#live) if (isAfter(entry.id, sub.cursor)) this.#deliver(sub, entry)
        this.#io.saw(entry)
      }
    }
  }

  /** A quiet stream is fine unless the store's revision is now below what was read: then Redis lost data. */
  async #checkRevision(generation: number): Promise<void> {
    let revision: number
    try {
      revision = await this.#io.revision()
    } catch {
      return
    }
    const reader = this.#reader
    if (reader?.generation !== generation || revision >= reader.cursor.rev) return
    this.#failReader(
      `the store went back from revision ${reader.cursor.rev} to ${revision}: Redis lost data (restarted without persistence, or failed over to a replica that was behind); read the current state and watch again`,
    )
  }

  /** Ends the reader and every subscriber following it. */
  #failReader(message: string): void {
    this.#reader = undefined
    const live = [...this.#live]
    this.#live.clear()
    for (const sub of live) this.#fail(sub, new CompactedError(message))
  }

  #deliver(sub: Subscriber, entry: LogEntry): void {
    sub.cursor = cursorOf(entry)
    const event = entry.event
    if (sub.done || !event || event.revision <= sub.after || !event.key.startsWith(sub.prefix)) return
    try {
      sub.sink.event(event)
    } catch {
      // A sink that throws must not stop delivery to the others.
    }
  }

  #fail(sub: Subscriber, error: Error): void {
    if (sub.done) return
    this.#drop(sub)
    try {
      sub.sink.error(error)
    } catch {
      // as in #deliver
    }
  }

  #drop(sub: Subscriber): void {
    if (sub.done && !this.#subscribers.has(sub)) return
    sub.done = true
    this.#live.delete(sub)
    if (this.#subscribers.delete(sub) && this.#subscribers.size === 0 && !this.#closed) this.#io.active(false)
  }
}

function lostMessage(newest: number): string {
  return `Redis lost the history after revision ${newest} (a restart without persistence, or a failover to a replica that was behind): the events and entries written after it are gone; read the current state and watch again`
}

function remember(reader: Reader, entry: LogEntry): void {
  reader.ring.push(entry)
  if (reader.ring.length > 2 * RING) {
    const dropped = reader.ring.splice(0, reader.ring.length - RING)
    reader.base = cursorOf(dropped[dropped.length - 1]!)
  }
}

/** Orders positions; a cursor at the last entry of a revision stands after every entry of it. */
function compareCursors(a: Cursor, b: Cursor): number {
  if (a.rev !== b.rev) return a.rev - b.rev
  if (a.last || b.last) return a.last === b.last ? 0 : a.last ? 1 : -1
  return a.seq - b.seq
}

/** Whether the entry `id` comes after `cursor`. */
function isAfter(id: StreamId, cursor: Cursor): boolean {
  return id.rev > cursor.rev || (id.rev === cursor.rev && !cursor.last && id.seq > cursor.seq)
}

function cursorOf(entry: LogEntry): Cursor {
  return { rev: entry.id.rev, seq: entry.id.seq, last: entry.last }
}

/** The id of the first entry after `cursor`, for XRANGE (inclusive). */
function startOf(cursor: Cursor): string {
  return cursor.last ? `${cursor.rev + 1}-0` : `${cursor.rev}-${cursor.seq + 1}`
}

/** An id XREAD reads after (exclusive) to get the first entry after `cursor`. */
function afterOf(cursor: Cursor): string {
  return cursor.last ? `${cursor.rev}-${MAX_SEQ}` : `${cursor.rev}-${cursor.seq}`
}

/** Whether `id` is the entry right after `cursor`. */
function follows(cursor: Cursor, id: StreamId): boolean {
  return cursor.last ? id.rev === cursor.rev + 1 && id.seq === 0 : id.rev === cursor.rev && id.seq === cursor.seq + 1
}

/** Whether entries that should follow `cursor` are gone, given what a replay returned. */
function missing(cursor: Cursor, entries: LogEntry[], revision: number): boolean {
  if (entries.length > 0) return !follows(cursor, entries[0]!.id)
  // Nothing after the cursor: fine only if the store has not moved past it.
  return !cursor.last || revision > cursor.rev
}
