/**
 * `GET /v1/<ns>/watch`: a watch as a server-sent event stream. Event ids are
 * revisions, so `Last-Event-ID` (or `from`) resumes it; the `ready` event
 * follows the replay, with the store's revision and epoch; a resume older
 * than the store's history, or from another life of the store, gets 410
 * COMPACTED.
 *
 * A watch from an old revision follows its reader (etcd's unsynced watchers,
 * caught up in batches): the history is read a page at a time and the next
 * page only once the socket has taken the last, so a watcher that reads
 * slowly, or not at all, holds a page of memory, not the history. Once caught
 * up it subscribes from where the pages stopped and gets live events as they
 * come; a peer that then falls too far behind is cut off by the listener's
 * output limits, and resumes from its last revision. If the history moves
 * past a slow reader meanwhile, it gets `CompactedError` (an SSE `error`).
 *
 * @module
 */
import type { HistoryLimits, HistoryPage, Unsubscribe, WatchEvent, WatchSink } from '../core/adapter'
import type { Adapter } from '../core/adapter'
import { ClosedError, RateLimitedError } from '../core/errors'
import { SSE_ERROR, SSE_READY, parseWith, watchQuery } from '../adapters/http/protocol'
import { readHistory } from './history-reader'
import { checkResume } from './history-route'
import type { Namespaces } from './namespaces'
import type { Settings, StorePosition } from './options'
import { queryOf, toWire, type Exchange, type Reply, type StreamSink } from './reply'

/** A watch's history pages: at most this many events and (estimated) bytes each. */
const CATCH_UP: HistoryLimits = { maxEvents: 1_000, maxBytes: 256 * 1024 }

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' }

/** The open watch streams of one node. */
export class Watches {
  readonly #namespaces: Namespaces
  readonly #settings: Settings
  readonly #streams = new Set<() => void>()
  #watchers = 0
  #closed = false

  constructor(namespaces: Namespaces, settings: Settings) {
    this.#namespaces = namespaces
    this.#settings = settings
  }

  /** Open watch streams (and streams being opened). */
  get watchers(): number {
    return this.#watchers
  }

  /** Ends every stream; no new one opens. */
  closeAll(): void {
    this.#closed = true
    for (const end of [...this.#streams]) end()
  }

  /** Opens a watch stream on namespace `ns`; an error before the stream starts is the HTTP answer. */
  async watch(ex: Exchange, ns: string): Promise<Reply> {
    const query = queryOf(ex)
    const lastEventId = ex.header('last-event-id')
    if (lastEventId !== null) query.from = lastEventId.trim()
    const { prefix, from, epoch } = parseWith(watchQuery, { prefix: '', ...query }, 'query')
    const { maxWatchers } = this.#settings
    if (this.#watchers >= maxWatchers) throw new RateLimitedError(`too many watchers (${maxWatchers}); close some and retry`)
    this.#watchers++
    let released = false
    const release = () => {
      if (!released) {
        released = true
        this.#watchers--
      }
    }
    try {
      const adapter = await this.#namespaces.adapterOf(ns)
      return from === undefined ? await this.#fresh(adapter, ns, prefix, release) : await this.#resumed(adapter, ns, prefix, from, epoch, release)
    } catch (err) {
      release()
      throw err
    }
  }

  /** A watch of what happens from now: subscribed first, so the `ready` revision is covered. */
  async #fresh(adapter: Adapter, ns: string, prefix: string, release: () => void): Promise<Reply> {
    // Until the stream is attached, events wait here (a few: the headers go out next); an error before then is the HTTP answer.
    let pending: string[] | undefined = []
    let early: Error | undefined
    let stream: Stream | undefined
    const sink: WatchSink = {
      event: (ev) => (stream ? stream.event(ev) : pending?.push(eventChunk(ev))),
      error: (err) => {
        if (stream) stream.fail(err)
        else early ??= err
      },
    }
    const unsubscribe = await adapter.watch(prefix, sink)
    try {
      const position = early ? undefined : await this.#settings.positionOf?.(ns)
      if (early) throw early
      return this.#reply(release, position, (s) => {
        stream = s
        s.subscribed(unsubscribe)
        for (const chunk of pending ?? []) s.write(chunk)
        pending = undefined
        s.ready()
      })
    } catch (err) {
      unsubscribe()
      throw err
    }
  }

  /** A watch from revision `from`: history pages as the reader takes them, then live. */
  async #resumed(adapter: Adapter, ns: string, prefix: string, from: number, epoch: string | undefined, release: () => void): Promise<Reply> {
    const position = await this.#settings.positionOf?.(ns)
    checkResume('watch from', from, epoch, position)
    // The first page before the headers: history already gone is the HTTP answer (410).
    const first = await readHistory(adapter, prefix, from, CATCH_UP)
    return this.#reply(release, position, (s) => void this.#catchUp(s, adapter, prefix, first))
  }

  /** Writes pages until the history is done, each once the socket took the last; then subscribes from there. */
  async #catchUp(s: Stream, adapter: Adapter, prefix: string, first: HistoryPage): Promise<void> {
    let page = first
    try {
      for (;;) {
        let room = true
        for (const ev of page.events) room = s.write(eventChunk(ev))
        if (s.stopped) return
        if (!page.more) break
        if (!room) await s.drained()
        if (s.stopped) return
        page = await readHistory(adapter, prefix, page.through, CATCH_UP)
        if (s.stopped) return
      }
      const unsubscribe = await adapter.watch(prefix, { event: (ev) => s.event(ev), error: (err) => s.fail(err) }, page.through)
      if (s.stopped) return unsubscribe()
      s.subscribed(unsubscribe)
      s.ready()
    } catch (err) {
      s.fail(err as Error)
    }
  }

  #reply(release: () => void, position: StorePosition | undefined, start: (s: Stream) => void): Reply {
    if (this.#closed) throw new ClosedError('the node is shutting down')
    const heartbeatMs = this.#settings.heartbeatMs
    const ready = position === undefined ? { heartbeat: heartbeatMs } : { revision: position.revision, epoch: position.epoch, heartbeat: heartbeatMs }
    const streams = this.#streams
    return {
      status: 200,
      headers: { ...SSE_HEADERS },
      stream(out) {
        const s = new Stream(out, ready, heartbeatMs, () => {
          streams.delete(end)
          release()
        })
        const end = () => s.stop()
        streams.add(end)
        s.write(`retry: 1000\n\n`)
        start(s)
        return end
      },
    }
  }
}

/** One open SSE stream: writes, the heartbeat, and the end (once). */
class Stream {
  stopped = false
  readonly #out: StreamSink
  readonly #ready: object
  readonly #onStop: () => void
  readonly #timer: ReturnType<typeof setInterval>
  #unsubscribe: Unsubscribe | undefined

  constructor(out: StreamSink, ready: object, heartbeatMs: number, onStop: () => void) {
    this.#out = out
    this.#ready = ready
    this.#onStop = onStop
    // From the start: a long catch-up with nothing for this prefix still shows the client a live stream.
    this.#timer = setInterval(() => this.write(`: ping\n\n`), heartbeatMs)
    ;(this.#timer as { unref?: () => void }).unref?.()
  }

  /** Sends a chunk; false when the socket asks to wait for drain. */
  write(chunk: string): boolean {
    if (this.stopped) return false
    return this.#out.write(chunk)
  }

  event(ev: WatchEvent): void {
    this.write(eventChunk(ev))
  }

  drained(): Promise<void> {
    return new Promise((resolve) => this.#out.drain(resolve))
  }

  subscribed(unsubscribe: Unsubscribe): void {
    this.#unsubscribe = unsubscribe
  }

  ready(): void {
    this.write(`event: ${SSE_READY}\ndata: ${JSON.stringify(this.#ready)}\n\n`)
  }

  /** The watch failed: the client hears why, then the stream ends. */
  fail(err: Error): void {
    this.write(`event: ${SSE_ERROR}\ndata: ${JSON.stringify(toWire(err))}\n\n`)
    this.stop()
  }

  stop(): void {
    if (this.stopped) return
    this.stopped = true
    clearInterval(this.#timer)
    this.#unsubscribe?.()
    this.#onStop()
    this.#out.end()
  }
}

/** The last event written and its chunk: a store hands one event object to every stream it goes to. */
let lastEvent: WatchEvent | undefined
let lastChunk = ''

/** An event as SSE, serialized once however many streams it goes to. */
function eventChunk(ev: WatchEvent): string {
  if (ev !== lastEvent) {
    lastChunk = `id: ${ev.revision}\ndata: ${JSON.stringify(ev)}\n\n`
    lastEvent = ev
  }
  return lastChunk
}
