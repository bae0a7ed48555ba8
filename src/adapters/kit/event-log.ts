/**
 * The watch hub of a store that lives in one process (memory, SQLite): a ring
 * of recent events for `fromRevision` replays and paged history reads, and
 * the live subscribers. Replay and registration happen in one synchronous
 * step, so no event falls between them; events are appended in commit order,
 * so every subscriber sees revision order with nothing lost or doubled.
 *
 * The ring is bounded three ways: a count of events, bytes for this log, and
 * (optionally) a {@link LogBudget} of bytes shared by every log of a node,
 * which drops the node's oldest events first, whatever their namespace.
 * Dropping events is compaction: a watch or read from before the oldest
 * event kept gets a `CompactedError`, never a gap. An event's bytes are
 * estimated from its key, value and owner (see {@link valueBytes}).
 *
 * The ring keeps each event's fields in parallel arrays, not event objects:
 * an object that lives for the ring's 10 000 commits outlives the young
 * generation and is copied and promoted by the garbage collector, which
 * doubled the cost of a commit. Event objects are built only for a reader.
 *
 * @module
 */
import type { HistoryLimits, HistoryPage, Unsubscribe, Value, WatchEvent, WatchSink } from '../../core/contract/adapter'
import { CompactedError } from '../../core/contract/errors'
import { copyValue } from './write'

interface Subscriber {
  prefix: string
  sink: WatchSink
}

/** A put as a store hands it to the log: the store's own entry, never mutated. */
export interface PutRecord {
  key: string
  revision: number
  value: Value
  created: number
  owner?: string
  ttl?: number
}

/** How much one log keeps. */
export interface LogLimits {
  /** Most events. */
  maxEvents: number
  /** Most bytes (estimated). Default: no limit of its own. */
  maxBytes?: number
  /** A byte budget shared with other logs. */
  budget?: LogBudget
}

/** Bytes an event or entry costs beyond its key, value and owner: its slot, its numbers. */
const EVENT_OVERHEAD = 64

/** About the bytes an entry (or its put event) takes in memory. */
export function entryBytes(key: string, value: Value, owner: string | undefined): number {
  return EVENT_OVERHEAD + 2 * key.length + valueBytes(value) + (owner === undefined ? 0 : 2 * owner.length)
}

export class EventLog {
  readonly #capacity: number
  readonly #maxBytes: number
  readonly #budget: LogBudget | undefined
  /** Whether events' bytes are counted (a byte limit or a budget applies). */
  readonly #counts: boolean
  /** This log's number in its budget. */
  readonly #id: number
  /** Slot of the oldest event; slots run on from there, wrapping at `#capacity`. */
  #head = 0
  #count = 0
  /** How many events were ever dropped: the sequence number of the oldest kept (the budget names events so). */
  #dropped = 0
  #bytes = 0
  // One slot per event, in parallel (see the module comment). The arrays grow up to the capacity, then wrap.
  #types: Array<WatchEvent['type']> = []
  #keys: string[] = []
  #revisions: number[] = []
  #values: Array<Value | undefined> = []
  #created: Array<number | undefined> = []
  #owners: Array<string | undefined> = []
  #ttls: Array<number | undefined> = []
  #sizes: number[] = []
  /** Every event at or below this revision has been dropped from the ring. */
  #compactedThrough: number
  #subscribers = new Set<Subscriber>()

  /** `compactedThrough`: the store's revision when the log starts empty (after a restart, say). */
  constructor(limits: number | LogLimits, compactedThrough = 0) {
    const l = typeof limits === 'number' ? { maxEvents: limits } : limits
    this.#capacity = Math.max(1, l.maxEvents)
    this.#maxBytes = l.maxBytes ?? Infinity
    this.#budget = l.budget
    this.#counts = this.#maxBytes !== Infinity || this.#budget !== undefined
    this.#id = this.#budget?.register(this) ?? -1
    this.#compactedThrough = compactedThrough
  }

  get watchers(): number {
    return this.#subscribers.size
  }

  /** Estimated bytes of the events kept. */
  get bytes(): number {
    return this.#bytes
  }

  /** Events kept. */
  get size(): number {
    return this.#count
  }

  /** Every event at or below this revision is gone. */
  get compactedThrough(): number {
    return this.#compactedThrough
  }

  append(event: WatchEvent): void {
    this.#keep(event.type, event.key, event.revision, event.value, event.created, event.owner, event.ttl)
    for (const s of this.#subscribers) if (event.key.startsWith(s.prefix)) deliver(s, event)
  }

  /** Appends a put (`size`: its {@link entryBytes}, if known); its event is built once, if a live watcher wants it, else when a replay reads it. */
  appendPut(put: PutRecord, size?: number): void {
    this.#keep('put', put.key, put.revision, put.value, put.created, put.owner, put.ttl, size)
    if (this.#subscribers.size === 0) return
    let event: WatchEvent | undefined
    for (const s of this.#subscribers) if (put.key.startsWith(s.prefix)) deliver(s, (event ??= putEvent(put)))
  }

  subscribe(prefix: string, sink: WatchSink, fromRevision?: number): Unsubscribe {
    const subscriber: Subscriber = { prefix, sink }
    if (fromRevision !== undefined) {
      if (fromRevision < this.#compactedThrough) {
        sink.error(this.#compacted('watch', fromRevision))
        return () => {}
      }
      for (let n = this.#firstAfter(fromRevision); n < this.#count; n++) {
        const i = this.#slot(n)
        if (this.#keys[i]!.startsWith(prefix)) deliver(subscriber, this.#event(i))
      }
    }
    this.#subscribers.add(subscriber)
    return () => {
      this.#subscribers.delete(subscriber)
    }
  }

  /**
   * One page of the events after revision `after` under `prefix`: it stops
   * between two revisions once it holds `maxEvents` events or `maxBytes`
   * bytes (estimated) of them, and is complete up to `through`. Without
   * `more`, `through` is the newest revision kept (the caller may know a
   * later one with no events). Throws `CompactedError` for history no longer kept.
   */
  read(prefix: string, after: number, limits: HistoryLimits): HistoryPage {
    if (after < this.#compactedThrough) throw this.#compacted('read', after)
    const events: WatchEvent[] = []
    let bytes = 0
    let through = after
    for (let n = this.#firstAfter(after); n < this.#count; n++) {
      const i = this.#slot(n)
      const revision = this.#revisions[i]!
      // Cut only between revisions, so `through` is complete.
      if (revision !== through && (events.length >= limits.maxEvents || bytes >= limits.maxBytes)) return { events, through, more: true }
      through = revision
      if (!this.#keys[i]!.startsWith(prefix)) continue
      events.push(this.#event(i))
      bytes += this.#counts ? this.#sizes[i]! : entryBytes(this.#keys[i]!, this.#values[i] ?? null, this.#owners[i])
    }
    return { events, through, more: false }
  }

  /** Ends every subscription with `error` (the store is closing), and gives the log's bytes back to its budget. */
  closeAll(error: Error): void {
    for (const s of this.#subscribers) s.sink.error(error)
    this.#subscribers.clear()
    while (this.#count > 0) this.dropOldest()
    this.#budget?.unregister(this.#id)
  }

  /** @internal Drops the oldest event (for the budget); false when the log is empty. */
  dropOldest(): boolean {
    if (this.#count === 0) return false
    const i = this.#head
    this.#compactedThrough = this.#revisions[i]!
    this.#bytes -= this.#sizes[i]!
    this.#budget?.release(this.#sizes[i]!)
    // Let go of the value now: a slot is reused only when the ring comes round.
    this.#values[i] = undefined
    this.#head = i + 1 === this.#capacity ? 0 : i + 1
    this.#count--
    this.#dropped++
    return true
  }

  /** @internal The sequence number of the oldest event kept (events are numbered from 0 as appended). */
  get oldestSeq(): number {
    return this.#dropped
  }

  #keep(
    type: WatchEvent['type'],
    key: string,
    revision: number,
    value: Value | undefined,
    created: number | undefined,
    owner: string | undefined,
    ttl: number | undefined,
    known?: number,
  ): void {
    // A log without byte limits (an in-process memory store's) keeps no sizes; a read estimates them when it needs them.
    const size = !this.#counts ? 0 : (known ?? (value === undefined ? EVENT_OVERHEAD + 2 * key.length : entryBytes(key, value, owner)))
    if (this.#count === this.#capacity) this.dropOldest()
    const i = this.#slot(this.#count)
    this.#types[i] = type
    this.#keys[i] = key
    this.#revisions[i] = revision
    this.#values[i] = value
    this.#created[i] = created
    this.#owners[i] = owner
    this.#ttls[i] = ttl
    this.#sizes[i] = size
    this.#count++
    this.#bytes += size
    // The newest event always stays, however large: a watcher of it must be able to get it.
    while (this.#bytes > this.#maxBytes && this.#count > 1) this.dropOldest()
    this.#budget?.add(this.#id, this.#dropped + this.#count - 1, size)
  }

  /** The slot of the `n`th event kept (0: the oldest). */
  #slot(n: number): number {
    const i = this.#head + n
    return i >= this.#capacity ? i - this.#capacity : i
  }

  /** The position (0: the oldest) of the first event kept with a revision above `after`. */
  #firstAfter(after: number): number {
    let lo = 0
    let hi = this.#count
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.#revisions[this.#slot(mid)]! <= after) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  #compacted(what: string, from: number): CompactedError {
    return new CompactedError(
      `${what} from revision ${from}: history up to revision ${this.#compactedThrough} is gone; read the current state and watch from its revision`,
    )
  }

  /** The event in slot `i`, built afresh: each reader gets its own copy of the value. */
  #event(i: number): WatchEvent {
    const type = this.#types[i]!
    const event: WatchEvent = { type, key: this.#keys[i]!, revision: this.#revisions[i]! }
    if (type !== 'put') return event
    event.value = copyValue(this.#values[i]!)
    event.created = this.#created[i]!
    const owner = this.#owners[i]
    if (owner !== undefined) event.owner = owner
    const ttl = this.#ttls[i]
    if (ttl !== undefined) event.ttl = ttl
    return event
  }
}

/**
 * A byte budget shared by the event logs of one node: when their events
 * together pass it, the oldest events of the node go first, whichever log
 * holds them (a global first-in, first-out over the logs, kept as two
 * parallel number queues: the log and the event's number in it).
 *
 * @example
 * const budget = new LogBudget(32 * 1024 * 1024)
 * const store = new LocalStore({ clock, history: { maxEvents: 10_000, budget } })
 */
export class LogBudget {
  /** The most bytes the logs may hold together. */
  readonly maxBytes: number
  #used = 0
  /** Events the logs hold together (the queue's other entries are stale). */
  #events = 0
  readonly #logs: Array<EventLog | undefined> = []
  readonly #free: number[] = []
  // The queue of events in append order; entries of events a log already dropped are skipped when met.
  #queueLog: number[] = []
  #queueSeq: number[] = []
  #queueHead = 0

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes
  }

  /** Bytes the logs hold now. */
  get used(): number {
    return this.#used
  }

  /** @internal */
  register(log: EventLog): number {
    const id = this.#free.pop() ?? this.#logs.length
    this.#logs[id] = log
    return id
  }

  /** @internal */
  unregister(id: number): void {
    this.#logs[id] = undefined
    this.#free.push(id)
    // Its queue entries now name a log that is gone or reused: drop them.
    this.#rebuild()
  }

  /** @internal A log appended event number `seq` of `bytes`; the node's oldest events go while the budget is passed. */
  add(id: number, seq: number, bytes: number): void {
    this.#used += bytes
    this.#events++
    this.#queueLog.push(id)
    this.#queueSeq.push(seq)
    // Oldest first; the event just appended (the queue's last) stays, as a log's own limit keeps its newest.
    while (this.#used > this.maxBytes && this.#queueHead < this.#queueLog.length - 1) {
      const log = this.#logs[this.#queueLog[this.#queueHead]!]
      const s = this.#queueSeq[this.#queueHead]!
      this.#queueHead++
      // An entry whose event its log dropped already (its own limits) is stale: skipped.
      if (log && log.oldestSeq === s) log.dropOldest()
    }
    const pending = this.#queueLog.length - this.#queueHead
    if ((this.#queueHead > 1024 && this.#queueHead * 2 > this.#queueLog.length) || pending - this.#events > this.#events + 1024) this.#rebuild()
  }

  /** @internal A log dropped an event of `bytes`. */
  release(bytes: number): void {
    this.#used -= bytes
    this.#events--
  }

  /** Keeps only the queue entries of events still kept, in order. */
  #rebuild(): void {
    const logs: number[] = []
    const seqs: number[] = []
    for (let k = this.#queueHead; k < this.#queueLog.length; k++) {
      const log = this.#logs[this.#queueLog[k]!]
      const s = this.#queueSeq[k]!
      if (log && s >= log.oldestSeq) {
        logs.push(this.#queueLog[k]!)
        seqs.push(s)
      }
    }
    this.#queueLog = logs
    this.#queueSeq = seqs
    this.#queueHead = 0
  }
}

function deliver(subscriber: Subscriber, event: WatchEvent): void {
  try {
    subscriber.sink.event(event)
  } catch {
    // A sink that throws must not break the commit that is delivering to it.
  }
}

function putEvent(put: PutRecord): WatchEvent {
  const event: WatchEvent = { type: 'put', key: put.key, revision: put.revision, value: copyValue(put.value), created: put.created }
  if (put.owner !== undefined) event.owner = put.owner
  if (put.ttl !== undefined) event.ttl = put.ttl
  return event
}

/**
 * About the bytes `value` takes in memory: two per string character (the
 * most V8 uses), eight per number, and a little per array slot and object
 * member. O(1) for the values locks hold (null, a short string); a walk for
 * objects, which the store has just copied anyway.
 */
export function valueBytes(value: Value): number {
  switch (typeof value) {
    case 'string':
      return 16 + 2 * value.length
    case 'number':
    case 'boolean':
      return 8
    default:
      break
  }
  if (value === null) return 8
  let n = 16
  if (Array.isArray(value)) for (const item of value) n += 8 + valueBytes(item)
  else for (const k of Object.keys(value)) n += 16 + 2 * k.length + valueBytes(value[k]!)
  return n
}
