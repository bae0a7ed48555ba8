/**
 * Every watch of one HTTP adapter over one event stream (`./watch-stream`);
 * each watch filters it by its prefix.
 *
 * The stream carries only the changes under the prefixes the watches name
 * (`./watch-filter`): a lock waiter's client parses the events of the keys it
 * waits on, not every commit of the namespace. A watch whose prefix the
 * stream does not carry yet waits for the node to take the new set (`POST
 * filter`, one at a time), holding what the stream brings meanwhile; the node
 * answers the revision after which it carries the prefix, and the watch
 * reads the changes up to it from the history, exactly as a watch from a
 * revision older than the ring does (below). A prefix no watch names any
 * more is dropped from the set at the next request; its events in flight are
 * filtered here. A reconnect asks for the set as it is then, from the
 * revision the stream reached: a prefix it carried before keeps its start,
 * a new one starts there. A node that does not filter (no stream id in its
 * `ready`) carries the whole namespace, as before.
 *
 * Why one stream: a browser gives an origin six HTTP/1.1 connections, and a
 * page that opened one stream per watch had none left for its requests; and a
 * lock waiter that opened a stream per failed attempt paid a connection and a
 * round trip for every wait. Now a watch costs no connection and, while the
 * stream is open, no request: it joins at once.
 *
 * Per watch, the guarantees of the Adapter contract hold:
 * - Without `fromRevision`, a watch joins the stream where it is: every
 *   change after `watch()` resolves is delivered. (It may also get changes
 *   other clients made just before, which the stream had not brought yet;
 *   never one older than the newest revision this adapter saw in an answer.)
 * - With `fromRevision` R, the changes after R come first. If the stream's
 *   ring of recent events reaches back to R, they come from it at once.
 *   Otherwise the node's history after R is fetched (`GET /events`, paged),
 *   while whatever the stream brings meanwhile is held; the two are spliced
 *   at the revision up to which the history is complete, so nothing falls
 *   between them or comes twice. History the node no longer has gives the
 *   watch a `CompactedError` (and `watch()` resolves, as a local store does).
 * - The stream delivers in revision order, once (see `./watch-stream`), and
 *   every watch sees it in that order.
 * - A watch joins only while the stream is connected; while it reconnects,
 *   a new watch waits, so that a resume the node can no longer serve fails
 *   the watches that were relying on it and not the new one (the new one
 *   gets a fresh stream).
 *
 * The stream opens with the first watch (from that watch's revision, which
 * saves the history request) and closes a little after the last one ends;
 * while it lingers it does not keep a Node process alive.
 *
 * @module
 */
import type { Unsubscribe, WatchEvent, WatchSink } from '../../core/contract/adapter'
import { ClosedError, isZarisError } from '../../core/contract/errors'
import { EventRing } from './event-ring'
import { Coverage } from './watch-filter'
import { EventStream, pause, type Filtered, type WatchContext } from './watch-stream'
import { catchUp, deliver, type HistoryPage, type Joiner, type Subscriber } from './watch-catch-up'

export type { HistoryPage }


/** A `filter` request: the stream's prefixes from now on, and the history after `after` under the ones it adds. */
export interface FilterBody {
  stream: string
  version: number
  prefixes: readonly string[]
  after?: number
}

/** What the hub needs from its adapter besides the stream's needs. */
export interface HubContext extends WatchContext {
  /** The node's history after `after` for keys starting with `prefix` (one page). */
  history(prefix: string, after: number, epoch: string | undefined): Promise<HistoryPage>
  /** The highest revision this adapter has seen in any answer. */
  seen(): number
  /** Ms the stream stays open after the last watch ended. */
  lingerMs: number
  /** Sets the prefixes of the node's stream `stream` (at endpoint `endpoint`): the revision after which it carries them. */
  filter(endpoint: number, body: FilterBody): Promise<{ revision: number; version: number; history?: HistoryPage & { after: number } }>
}



/** Recent changes kept for watches from a revision the stream has passed. */
const RING_EVENTS = 1_024
const RING_BYTES = 1024 * 1024
/** Filter requests that fail in a row (the node busy, a connection lost) before the waiting watches fail. */
const MAX_FILTER_FAILURES = 8
/** Ms before a prefix no watch names leaves the stream's set (sooner if a prefix is added). */
const DROP_DELAY_MS = 50

/** The watches of one adapter, multiplexed over its one event stream. */
export class WatchHub {
  readonly #ctx: HubContext
  readonly #ring = new EventRing(RING_EVENTS, RING_BYTES)
  readonly #subscribers = new Set<Subscriber>()
  #joiners: Joiner[] = []
  #stream: EventStream | undefined
  /** The watch whose revision the stream was opened from, until the node accepts it. */
  #origin: Joiner | undefined
  /** The stream is connected: a watch may join now. */
  #live = false
  #linger: ReturnType<typeof setTimeout> | undefined
  #closed = false
  #cov = new Coverage()
  /** The node's stream while it is filtered and connected (filter requests name it). */
  #filtered: Filtered | undefined
  #syncing = false
  #removal: ReturnType<typeof setTimeout> | undefined
  #syncQueued = false
  #filterFailures = 0
  /** The node refused a filtered stream (an older node): the stream carries the namespace. */
  #unfiltered = false

  constructor(ctx: HubContext) {
    this.#ctx = ctx
  }

  /** How many watches are open (for tests and metrics). */
  get size(): number {
    return this.#subscribers.size
  }

  /** True while the shared stream is open or opening. */
  get streaming(): boolean {
    return this.#stream !== undefined
  }

  /** The id of the node's filtered stream while it is connected: a commit's outcome may be sent on it (`answerOn`). */
  get answerTo(): string | undefined {
    return this.#live ? this.#filtered?.stream : undefined
  }

  /** Adds a watch; resolves once it is established (see the module comment). */
  watch(prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe> {
    if (this.#closed) return Promise.reject(new ClosedError('the http adapter is closed'))
    this.#stopLinger()
    return new Promise<Unsubscribe>((resolve, reject) => {
      const joiner: Joiner = { prefix, sink, from: fromRevision, resolve, reject }
      this.#cov.want(prefix)
      if (this.#live) return this.#join(joiner)
      this.#joiners.push(joiner)
      if (!this.#stream) this.#open(joiner)
    })
  }

  /** Ends every watch quietly and closes the stream. */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#stopLinger()
    this.#shut()
    const closed = new ClosedError('the http adapter was closed while the watch was opening')
    for (const sub of this.#subscribers) {
      sub.done = true
      sub.fail?.(closed)
      sub.waiting?.reject(closed)
    }
    this.#subscribers.clear()
    const joiners = this.#joiners
    this.#joiners = []
    for (const j of joiners) j.reject(closed)
  }

  /** Opens the stream: from `origin`'s revision (the node replays what it needs), or fresh. */
  #open(origin: Joiner | undefined): void {
    this.#ring.reset(undefined)
    this.#origin = origin?.from === undefined ? undefined : origin
    this.#cov = new Coverage()
    this.#filtered = undefined
    for (const j of this.#joiners) this.#cov.want(j.prefix)
    const stream: EventStream = new EventStream(
      this.#ctx,
      {
        ready: (first, start, filtered) => {
          if (this.#stream !== stream) return
          if (first) this.#ring.reset(start)
          this.#origin = undefined
          this.#live = true
          this.#carried(filtered)
          const joiners = this.#joiners
          this.#joiners = []
          for (const j of joiners) this.#join(j)
          this.#idle()
        },
        event: (event, size) => {
          if (this.#stream === stream) this.#dispatch(event, size)
        },
        interrupted: () => {
          if (this.#stream !== stream) return
          this.#live = false
          this.#filtered = undefined
          for (const sub of this.#subscribers) sub.sink.reconnecting?.()
        },
        ended: (error) => {
          if (this.#stream === stream) this.#ended(stream, error)
        },
      },
      this.#origin?.from,
      this.#unfiltered ? undefined : () => this.#cov.target(),
    )
    this.#stream = stream
  }

  /** Closes the stream (the last watch left, or the adapter closed). */
  #shut(): void {
    this.#stream?.stop()
    this.#stream = undefined
    this.#filtered = undefined
    this.#live = false
    this.#ring.reset(undefined)
  }

  #dispatch(event: WatchEvent, size: number): void {
    // The ring first: a sink that opens a watch from here must find this event in it.
    this.#ring.push(event, size)
    // A snapshot: a watch joined by a sink right now has had this event from the ring.
    for (const sub of [...this.#subscribers]) {
      if (sub.done || !event.key.startsWith(sub.prefix)) continue
      if (sub.held) sub.held.push(event)
      else if (event.revision > sub.after) deliver(sub.sink, event)
    }
  }

  #ended(stream: EventStream, error: Error): void {
    this.#stopLinger()
    this.#stream = undefined
    this.#filtered = undefined
    this.#live = false
    this.#ring.reset(undefined)
    const subscribers = [...this.#subscribers]
    this.#subscribers.clear()
    for (const sub of subscribers) {
      sub.done = true
      if (sub.waiting) sub.waiting.reject(error)
      else if (sub.fail) sub.fail(error)
      else sub.sink.error(error)
    }
    let joiners = this.#joiners
    // A node older than filtered streams refuses the query: the namespace then, as before.
    if (!stream.opened && !this.#unfiltered && isZarisError(error, 'INVALID_ARGUMENT') && /prefixes/.test(error.message) && joiners.length > 0) {
      this.#unfiltered = true
      this.#open(this.#origin ?? undefined)
      return
    }
    this.#joiners = []
    const origin = this.#origin
    this.#origin = undefined
    if (isZarisError(error, 'COMPACTED') && (stream.opened || stream.resumed)) {
      if (origin && !stream.opened) {
        // The node refused the revision this watch asked for: its history is gone (as a local store tells it).
        joiners = joiners.filter((j) => j !== origin)
        origin.sink.error(error)
        origin.resolve(() => {})
      }
      // The history the stream needed is gone; the other watches waiting to join need none of it.
      if (joiners.length > 0) {
        this.#joiners = joiners
        this.#open(undefined)
      }
      return
    }
    for (const j of joiners) j.reject(error)
  }

  #join(j: Joiner): void {
    const stream = this.#stream!
    const sub: Subscriber = { prefix: j.prefix, sink: j.sink, after: -1, held: undefined, fail: undefined, done: false, waiting: undefined }
    const from = j.from
    sub.after = from ?? Math.max(stream.last ?? -1, this.#ctx.seen())
    const since = this.#cov.since(j.prefix)
    if (since === undefined) {
      // Not carried yet: hold what comes for it until the node takes the new set.
      sub.held = []
      sub.waiting = j
      this.#subscribers.add(sub)
      return this.#sync()
    }
    if (from === undefined) {
      this.#subscribers.add(sub)
      return j.resolve(() => this.#drop(sub))
    }
    if (this.#ring.covers(from) && since <= from) {
      this.#subscribers.add(sub)
      for (const event of this.#ring.since(from)) if (event.key.startsWith(sub.prefix)) deliver(sub.sink, event)
      return j.resolve(() => this.#drop(sub))
    }
    // Older than the ring (or than the stream's carrying the prefix): the node's history, then what the stream brings meanwhile.
    const ringFloor = this.#ring.floor
    const floor = ringFloor === undefined ? (since >= 0 ? since : undefined) : Math.max(ringFloor, since)
    sub.held = floor === undefined ? [] : this.#ring.since(floor).filter((e) => e.key.startsWith(sub.prefix))
    this.#subscribers.add(sub)
    this.#settle(sub, j, floor)
  }

  /** Completes `j`'s watch once the history after `sub.after` reaches `floor` (undefined: one page will do), then what was held. */
  #settle(sub: Subscriber, j: Joiner, floor: number | undefined, first?: HistoryPage & { after: number }): void {
    const unsubscribe = () => this.#drop(sub)
    const finish = () => {
      if (sub.done) return
      const held = sub.held ?? []
      sub.held = undefined
      sub.fail = undefined
      for (const event of held) if (event.revision > sub.after) deliver(sub.sink, event)
      j.resolve(unsubscribe)
    }
    if (j.from === undefined || (floor !== undefined && sub.after >= floor)) return finish()
    sub.fail = (error) => j.reject(error)
    catchUp(this.#ctx, sub, floor, this.#stream?.epoch, first).then(finish, (error: Error) => {
      if (sub.done) return
      this.#drop(sub)
      if (isZarisError(error, 'COMPACTED')) {
        // As a local store does: the watch is set up, and its sink is told at once.
        sub.sink.error(error)
        j.resolve(() => {})
      } else j.reject(error)
    })
  }

  /** A connection is ready: what it carries, and the watches that waited for it. */
  #carried(filtered: Filtered | undefined): void {
    this.#filterFailures = 0
    if (!filtered || filtered.stream === undefined) {
      this.#cov.all = true
      this.#filtered = undefined
    } else {
      this.#filtered = filtered
      this.#cov.inflight = undefined
      this.#cov.confirm(filtered.prefixes, filtered.after)
    }
    this.#satisfy()
  }

  /** Completes the waiting watches whose prefix the stream now carries. */
  #satisfy(first?: HistoryPage & { after: number }): void {
    for (const sub of [...this.#subscribers]) {
      const j = sub.waiting
      if (!j || sub.done) continue
      const since = this.#cov.since(sub.prefix)
      if (since === undefined) continue
      sub.waiting = undefined
      // A fresh watch needs nothing from before the node took the set (it answered before watch() resolves).
      if (j.from === undefined) sub.after = Math.max(sub.after, since)
      this.#settle(sub, j, since, first)
    }
  }

  /** Sends the set the watches need, one request at a time, once the microtask's changes are in. */
  #sync(): void {
    if (this.#syncQueued) return
    this.#syncQueued = true
    queueMicrotask(() => {
      this.#syncQueued = false
      this.#request()
    })
  }

  #request(): void {
    const filtered = this.#filtered
    if (this.#syncing || !filtered || !this.#live || this.#closed || !this.#cov.stale()) return
    const cov = this.#cov
    const prefixes = cov.target()
    // The oldest revision a waiting watch needs the history after: the node answers a page of it with the set.
    let after: number | undefined
    for (const sub of this.#subscribers) if (sub.waiting?.from !== undefined) after = Math.min(after ?? sub.after, sub.after)
    const version = ++cov.version
    cov.inflight = prefixes
    this.#syncing = true
    const current = () => this.#filtered === filtered && this.#cov === cov
    this.#ctx.filter(filtered.endpoint, after === undefined ? { stream: filtered.stream!, version, prefixes } : { stream: filtered.stream!, version, prefixes, after }).then(
      (answer) => {
        this.#syncing = false
        if (!current()) return this.#sync()
        cov.inflight = undefined
        this.#filterFailures = 0
        if (answer.version === version) cov.confirm(prefixes, answer.revision)
        // A version the node had already passed (a request repeated): go on from its.
        else cov.version = Math.max(cov.version, answer.version)
        this.#satisfy(answer.history)
        this.#sync()
      },
      (error: Error) => {
        this.#syncing = false
        if (!current()) return this.#sync()
        cov.inflight = undefined
        // The node busy, or the stream gone there (it reconnects and sends the set then): again, a little later.
        if (isZarisError(error, 'UNAVAILABLE') && ++this.#filterFailures < MAX_FILTER_FAILURES) {
          void pause(25 * 2 ** this.#filterFailures, new AbortController().signal).then(() => this.#sync())
          return
        }
        for (const sub of [...this.#subscribers]) {
          if (!sub.waiting) continue
          const j = sub.waiting
          this.#drop(sub)
          j.reject(error)
        }
      },
    )
  }

  #drop(sub: Subscriber): void {
    if (sub.done) return
    sub.done = true
    this.#subscribers.delete(sub)
    this.#cov.unwant(sub.prefix)
    this.#idle()
    this.#syncLater()
  }

  /**
   * A prefix no watch needs is dropped from the set a little later, or with
   * the next prefix added: a lock waiter drops its watch and watches again
   * within a round trip, and one request then does both.
   */
  #syncLater(): void {
    if (this.#removal !== undefined) return
    this.#removal = setTimeout(() => {
      this.#removal = undefined
      this.#sync()
    }, DROP_DELAY_MS)
    ;(this.#removal as { unref?: () => void }).unref?.()
  }

  /** With no watch left, lets the stream linger a little for the next one, then closes it. */
  #idle(): void {
    if (this.#subscribers.size > 0 || this.#joiners.length > 0 || !this.#stream || this.#linger !== undefined) return
    this.#stream.ref(false)
    this.#linger = setTimeout(() => {
      this.#linger = undefined
      if (this.#subscribers.size === 0 && this.#joiners.length === 0) this.#shut()
    }, this.#ctx.lingerMs)
    ;(this.#linger as { unref?: () => void }).unref?.()
  }

  #stopLinger(): void {
    if (this.#linger === undefined) return
    clearTimeout(this.#linger)
    this.#linger = undefined
    this.#stream?.ref(true)
  }
}
