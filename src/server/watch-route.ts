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
 * A stream opened with `prefixes` is filtered (./sse-stream, ./stream-filter):
 * it follows the whole namespace on the node and writes only the changes
 * under its prefixes, which `POST filter` replaces while it runs. Its history
 * is read under the prefixes' common prefix.
 *
 * @module
 */
import type { Adapter, HistoryLimits, HistoryPage, WatchEvent, WatchSink } from '../core/contract/adapter'
import { ClosedError, InvalidArgumentError, RateLimitedError, UnavailableError } from '../core/contract/errors'
import { filterRequest, parseWith, watchQuery } from './protocol'
import { readHistory } from './history-reader'
import { checkResume } from './history-route'
import type { Namespaces } from './namespaces'
import type { Settings, StorePosition } from './options'
import { json, queryOf, type Exchange, type Reply } from './reply'
import { SseStream } from './sse-stream'
import { PrefixFilter, checkCount, filterOfQuery } from './stream-filter'

/** A watch's history pages: at most this many events and (estimated) bytes each. */
const CATCH_UP: HistoryLimits = { maxEvents: 1_000, maxBytes: 256 * 1024 }
/** The history page a `filter` answer may carry: small, the rest is a `GET events` away. */
const FILTER_PAGE: HistoryLimits = { maxEvents: 256, maxBytes: 64 * 1024 }

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' }

/** Where a new stream's changes come from, and which of them it carries. */
interface Spec {
  ns: string
  /** The prefix the store is asked for: the query's, or '' for a filtered stream (its prefixes change). */
  prefix: string
  /** The prefix its history is read under. */
  historyPrefix: string
  filter: PrefixFilter | undefined
}

/** The open watch streams of one node. */
export class Watches {
  readonly #namespaces: Namespaces
  readonly #settings: Settings
  readonly #streams = new Set<() => void>()
  /** The filtered streams, by id, for `filter` requests. */
  readonly #filtered = new Map<string, { ns: string; stream: SseStream }>()
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
    const { prefix, prefixes, from, epoch } = parseWith(watchQuery, { prefix: '', ...query }, 'query')
    const filter = prefixes === undefined ? undefined : filterOfQuery(prefixes)
    if (filter && prefix !== '') throw new InvalidArgumentError('prefix: a stream with prefixes follows them, not a prefix; leave prefix empty')
    const spec: Spec = { ns, prefix, historyPrefix: filter ? filter.common() : prefix, filter }
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
      return from === undefined ? await this.#fresh(adapter, spec, release) : await this.#resumed(adapter, spec, from, epoch, release)
    } catch (err) {
      release()
      throw err
    }
  }

  /**
   * `POST filter`: replaces the prefixes of a filtered stream of this node,
   * at once (no change can fall between the answer's revision and the new
   * set); with `after`, also a page of the history after it under the
   * prefixes the request adds, read after the change (past the revision,
   * it repeats what the stream brings: the client keeps the first of each).
   */
  async filter(ns: string, body: unknown): Promise<Reply> {
    if (typeof body === 'object' && body !== null) checkCount((body as { prefixes?: unknown }).prefixes)
    const { stream: id, version, prefixes, after } = parseWith(filterRequest, body, 'body')
    const filter = new PrefixFilter(prefixes)
    const found = this.#filtered.get(id)
    // Another node's stream, or one that ended: the client's stream reconnects and sends its prefixes then.
    if (!found || found.ns !== ns || found.stream.stopped) throw new UnavailableError(`no watch stream ${id} is open on this node`)
    const s = found.stream
    if (!s.live) throw new UnavailableError(`watch stream ${id} is still catching up; retry once it is ready`)
    const before = s.filter
    const answer = s.refilter(version, filter)
    const added = before ? filter.prefixes.filter((p) => !before.match(p)) : []
    if (after === undefined || added.length === 0 || after >= answer.revision || answer.version !== version) return json(200, answer)
    const scope = new PrefixFilter(added)
    try {
      const adapter = await this.#namespaces.adapterOf(ns)
      const page = await readHistory(adapter, scope.common(), after, FILTER_PAGE)
      const events = page.events.filter((ev) => scope.match(ev.key))
      // Read whole after the change: complete at least up to the revision the change was made at.
      const through = page.more ? page.through : Math.max(page.through, answer.revision)
      return json(200, { ...answer, history: { after, events, through, more: page.more } })
    } catch {
      // History gone (or the store failing): the client asks `GET events`, which says why.
      return json(200, answer)
    }
  }

  /** The live filtered stream `id` of namespace `ns`, for a commit whose answer goes to it (`answerOn`). */
  answerStream(ns: string, id: string): SseStream | undefined {
    const found = this.#filtered.get(id)
    return found && found.ns === ns && found.stream.live && !found.stream.stopped ? found.stream : undefined
  }

  /** A watch of what happens from now: subscribed first, so the `ready` revision is covered. */
  async #fresh(adapter: Adapter, spec: Spec, release: () => void): Promise<Reply> {
    // Until the stream is attached, events wait here (a few: the headers go out next); an error before then is the HTTP answer.
    let pending: WatchEvent[] | undefined = []
    let early: Error | undefined
    let stream: SseStream | undefined
    const sink: WatchSink = {
      event: (ev) => (stream ? stream.event(ev) : pending?.push(ev)),
      error: (err) => {
        if (stream) stream.fail(err)
        else early ??= err
      },
    }
    const unsubscribe = await adapter.watch(spec.prefix, sink)
    try {
      const position = early ? undefined : await this.#settings.positionOf?.(spec.ns)
      if (early) throw early
      return this.#reply(spec, release, position, position?.revision, (s) => {
        stream = s
        s.subscribed(unsubscribe)
        for (const ev of pending ?? []) s.event(ev)
        pending = undefined
        s.ready()
      })
    } catch (err) {
      unsubscribe()
      throw err
    }
  }

  /** A watch from revision `from`: history pages as the reader takes them, then live. */
  async #resumed(adapter: Adapter, spec: Spec, from: number, epoch: string | undefined, release: () => void): Promise<Reply> {
    const position = await this.#settings.positionOf?.(spec.ns)
    checkResume('watch from', from, epoch, position)
    // The first page before the headers: history already gone is the HTTP answer (410).
    const first = await readHistory(adapter, spec.historyPrefix, from, CATCH_UP)
    return this.#reply(spec, release, position, from, (s) => void this.#catchUp(s, adapter, spec, first))
  }

  /** Writes pages until the history is done, each once the socket took the last; then subscribes from there. */
  async #catchUp(s: SseStream, adapter: Adapter, spec: Spec, first: HistoryPage): Promise<void> {
    let page = first
    try {
      for (;;) {
        const room = s.page(page)
        if (s.stopped) return
        if (!page.more) break
        if (!room) await s.drained()
        if (s.stopped) return
        page = await readHistory(adapter, spec.historyPrefix, page.through, CATCH_UP)
        if (s.stopped) return
      }
      const unsubscribe = await adapter.watch(spec.prefix, { event: (ev) => void s.event(ev), error: (err) => s.fail(err) }, page.through)
      if (s.stopped) return unsubscribe()
      s.subscribed(unsubscribe)
      s.ready()
    } catch (err) {
      s.fail(err as Error)
    }
  }

  #reply(spec: Spec, release: () => void, position: StorePosition | undefined, start: number | undefined, begin: (s: SseStream) => void): Reply {
    if (this.#closed) throw new ClosedError('the node is shutting down')
    const heartbeatMs = this.#settings.heartbeatMs
    const ready = position === undefined ? { heartbeat: heartbeatMs } : { revision: position.revision, epoch: position.epoch, heartbeat: heartbeatMs }
    const streams = this.#streams
    const filtered = this.#filtered
    return {
      status: 200,
      headers: { ...SSE_HEADERS },
      stream(out) {
        const id = spec.filter ? newStreamId() : undefined
        const s = new SseStream(
          out,
          ready,
          heartbeatMs,
          () => {
            streams.delete(end)
            if (id !== undefined) filtered.delete(id)
            release()
          },
          spec.filter && id !== undefined ? { filter: spec.filter, id, start } : undefined,
        )
        const end = () => s.stop()
        streams.add(end)
        if (id !== undefined) filtered.set(id, { ns: spec.ns, stream: s })
        s.write(`retry: 1000\n\n`)
        begin(s)
        return end
      },
    }
  }
}

/** An id no client can guess (another client's stream is not theirs to refilter). */
function newStreamId(): string {
  return globalThis.crypto.randomUUID()
}

