/**
 * The watch hub of a store that lives in one process (memory, SQLite): a ring
 * of recent events for `fromRevision` replays, and the live subscribers.
 * Replay and registration happen in one synchronous step, so no event falls
 * between them; events are appended in commit order, so every subscriber sees
 * revision order with nothing lost or doubled.
 *
 * The ring keeps each event's fields in parallel arrays, not event objects:
 * an object that lives for the ring's 10 000 commits outlives the young
 * generation and is copied and promoted by the garbage collector, which
 * doubled the cost of a commit. Event objects are built only for a watcher.
 *
 * @module
 */
import type { Unsubscribe, Value, WatchEvent, WatchSink } from '../../core/adapter'
import { CompactedError } from '../../core/errors'
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

export class EventLog {
  readonly #capacity: number
  /** Slot of the oldest event; slots run on from there, wrapping at `#capacity`. */
  #head = 0
  #count = 0
  // One slot per event, in parallel (see the module comment). The arrays grow up to the capacity, then wrap.
  #types: Array<WatchEvent['type']> = []
  #keys: string[] = []
  #revisions: number[] = []
  #values: Array<Value | undefined> = []
  #created: Array<number | undefined> = []
  #owners: Array<string | undefined> = []
  #ttls: Array<number | undefined> = []
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
    this.#keep(event.type, event.key, event.revision, event.value, event.created, event.owner, event.ttl)
    for (const s of this.#subscribers) if (event.key.startsWith(s.prefix)) deliver(s, event)
  }

  /** Appends a put; its event is built once, if a live watcher wants it, else when a replay reads it. */
  appendPut(put: PutRecord): void {
    this.#keep('put', put.key, put.revision, put.value, put.created, put.owner, put.ttl)
    if (this.#subscribers.size === 0) return
    let event: WatchEvent | undefined
    for (const s of this.#subscribers) if (put.key.startsWith(s.prefix)) deliver(s, (event ??= putEvent(put)))
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
      for (let n = 0; n < this.#count; n++) {
        const i = (this.#head + n) % this.#capacity
        if (this.#revisions[i]! > fromRevision && this.#keys[i]!.startsWith(prefix)) deliver(subscriber, this.#event(i))
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

  #keep(
    type: WatchEvent['type'],
    key: string,
    revision: number,
    value: Value | undefined,
    created: number | undefined,
    owner: string | undefined,
    ttl: number | undefined,
  ): void {
    let i: number
    if (this.#count < this.#capacity) {
      i = this.#count++
      // Until the ring is full the head stays at slot 0, so slot `count` is the next free one.
    } else {
      i = this.#head
      this.#compactedThrough = this.#revisions[i]!
      this.#head = i + 1 === this.#capacity ? 0 : i + 1
    }
    this.#types[i] = type
    this.#keys[i] = key
    this.#revisions[i] = revision
    this.#values[i] = value
    this.#created[i] = created
    this.#owners[i] = owner
    this.#ttls[i] = ttl
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
