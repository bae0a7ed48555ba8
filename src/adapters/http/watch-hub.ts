/**
 * Every watch of one HTTP adapter over one event stream (`./watch-stream`)
 * that follows the whole namespace; each watch filters it by its prefix.
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
import type { Unsubscribe, WatchEvent, WatchSink } from '../../core/adapter'
import { ClosedError, UnavailableError, isZarisError } from '../../core/errors'
import { EventRing } from './event-ring'
import { EventStream, pause, type WatchContext } from './watch-stream'

/** One page of a node's history: complete for every revision up to `through`. */
export interface HistoryPage {
  events: WatchEvent[]
  through: number
  more: boolean
}

/** What the hub needs from its adapter besides the stream's needs. */
export interface HubContext extends WatchContext {
  /** The node's history after `after` for keys starting with `prefix` (one page). */
  history(prefix: string, after: number, epoch: string | undefined): Promise<HistoryPage>
  /** The highest revision this adapter has seen in any answer. */
  seen(): number
  /** Ms the stream stays open after the last watch ended. */
  lingerMs: number
}

interface Subscriber {
  readonly prefix: string
  readonly sink: WatchSink
  /** Changes at or below this revision are not delivered: had already, or older than the watch. */
  after: number
  /** While catching up on history: the stream's changes, kept for after it. */
  held: WatchEvent[] | undefined
  /** While catching up: fails the opening `watch()` instead of the sink. */
  fail: ((error: Error) => void) | undefined
  done: boolean
}

interface Joiner {
  readonly prefix: string
  readonly sink: WatchSink
  readonly from: number | undefined
  resolve(unsubscribe: Unsubscribe): void
  reject(error: Error): void
}

/** Recent changes kept for watches from a revision the stream has passed. */
const RING_EVENTS = 1_024
const RING_BYTES = 1024 * 1024
/** History requests that bring nothing new before a catch-up gives up. */
const MAX_STALLS = 5

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

  /** Adds a watch; resolves once it is established (see the module comment). */
  watch(prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe> {
    if (this.#closed) return Promise.reject(new ClosedError('the http adapter is closed'))
    this.#stopLinger()
    return new Promise<Unsubscribe>((resolve, reject) => {
      const joiner: Joiner = { prefix, sink, from: fromRevision, resolve, reject }
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
    const stream: EventStream = new EventStream(
      this.#ctx,
      {
        ready: (first, start) => {
          if (this.#stream !== stream) return
          if (first) this.#ring.reset(start)
          this.#origin = undefined
          this.#live = true
          const joiners = this.#joiners
          this.#joiners = []
          for (const j of joiners) this.#join(j)
          this.#idle()
        },
        event: (event, size) => {
          if (this.#stream === stream) this.#dispatch(event, size)
        },
        interrupted: () => {
          if (this.#stream === stream) this.#live = false
        },
        ended: (error) => {
          if (this.#stream === stream) this.#ended(stream, error)
        },
      },
      this.#origin?.from,
    )
    this.#stream = stream
  }

  /** Closes the stream (the last watch left, or the adapter closed). */
  #shut(): void {
    this.#stream?.stop()
    this.#stream = undefined
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
    this.#live = false
    this.#ring.reset(undefined)
    const subscribers = [...this.#subscribers]
    this.#subscribers.clear()
    for (const sub of subscribers) {
      sub.done = true
      if (sub.fail) sub.fail(error)
      else sub.sink.error(error)
    }
    let joiners = this.#joiners
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
    const sub: Subscriber = { prefix: j.prefix, sink: j.sink, after: -1, held: undefined, fail: undefined, done: false }
    const unsubscribe = () => this.#drop(sub)
    const from = j.from
    if (from === undefined) {
      sub.after = Math.max(stream.last ?? -1, this.#ctx.seen())
      this.#subscribers.add(sub)
      return j.resolve(unsubscribe)
    }
    sub.after = from
    if (this.#ring.covers(from)) {
      this.#subscribers.add(sub)
      for (const event of this.#ring.since(from)) if (event.key.startsWith(sub.prefix)) deliver(sub.sink, event)
      return j.resolve(unsubscribe)
    }
    // Older than the ring: the node's history, then what the stream brings meanwhile.
    const floor = this.#ring.floor
    sub.held = floor === undefined ? [] : this.#ring.since(floor).filter((e) => e.key.startsWith(sub.prefix))
    sub.fail = (error) => j.reject(error)
    this.#subscribers.add(sub)
    this.#catchUp(sub, floor, stream.epoch).then(
      () => {
        if (sub.done) return
        const held = sub.held ?? []
        sub.held = undefined
        sub.fail = undefined
        for (const event of held) if (event.revision > sub.after) deliver(sub.sink, event)
        j.resolve(unsubscribe)
      },
      (error: Error) => {
        if (sub.done) return
        this.#drop(sub)
        if (isZarisError(error, 'COMPACTED')) {
          // As a local store does: the watch is set up, and its sink is told at once.
          sub.sink.error(error)
          j.resolve(() => {})
        } else j.reject(error)
      },
    )
  }

  /**
   * Delivers the node's history after `sub.after` until it reaches `floor`,
   * where the ring (and so `sub.held`) starts; undefined `floor`: the stream
   * had brought nothing yet, so all of it is held and any history will do.
   */
  async #catchUp(sub: Subscriber, floor: number | undefined, epoch: string | undefined): Promise<void> {
    let stalls = 0
    for (;;) {
      const page = await this.#ctx.history(sub.prefix, sub.after, epoch)
      if (sub.done) return
      for (const event of page.events) if (event.revision > sub.after) deliver(sub.sink, event)
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

  #drop(sub: Subscriber): void {
    if (sub.done) return
    sub.done = true
    this.#subscribers.delete(sub)
    this.#idle()
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

function deliver(sink: WatchSink, event: WatchEvent): void {
  try {
    sink.event(event)
  } catch {
    // A sink that throws must not end the stream for the events after it.
  }
}
