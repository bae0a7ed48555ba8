/**
 * `GET /v1/<ns>/watch`: a watch as a server-sent event stream. Event ids are
 * revisions, so `Last-Event-ID` (or `from`) resumes it; the first event past
 * the replay is `ready`, with the store's revision and epoch; a resume older
 * than the store's history, or from another life of the store, gets 410
 * COMPACTED. A peer that falls too far behind is cut off and resumes.
 *
 * @module
 */
import type { Unsubscribe, WatchEvent } from '../core/adapter'
import { ClosedError, CompactedError, RateLimitedError } from '../core/errors'
import { SSE_ERROR, SSE_READY, parseWith, watchQuery } from '../adapters/http/protocol'
import type { Namespaces } from './namespaces'
import type { Settings } from './options'
import { queryOf, toWire, type Exchange, type Reply, type StreamSink } from './reply'

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
    const { maxWatchers, heartbeatMs } = this.#settings
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
      // Until the stream is attached, events wait here; an error before then becomes the HTTP answer.
      let pending: string[] | undefined = []
      let early: Error | undefined
      let out: StreamSink | undefined
      let stop: (() => void) | undefined
      const emit = (chunk: string) => {
        if (pending) pending.push(chunk)
        else if (out && !out.write(chunk)) stop?.() // the peer fell too far behind: it will resume
      }
      const sink = {
        event: (ev: WatchEvent) => emit(`id: ${ev.revision}\ndata: ${JSON.stringify(ev)}\n\n`),
        error: (err: Error) => {
          if (pending && !out) {
            early ??= err
            return
          }
          emit(`event: ${SSE_ERROR}\ndata: ${JSON.stringify(toWire(err))}\n\n`)
          stop?.()
        },
      }
      const unsubscribe: Unsubscribe = await adapter.watch(prefix, sink, from)
      const position = early ? undefined : await this.#settings.positionOf?.(ns)
      const revision = position?.revision
      if (!early && position && epoch !== undefined && epoch !== position.epoch) {
        early = new CompactedError(`watch from revision ${from ?? 0}: the store here is not the one that history came from (it was reset or replaced); read the current state again`)
      }
      if (!early && from !== undefined && revision !== undefined && from > revision) {
        // The client saw revisions this store never reached: the store was reset (a memory node restarted).
        early = new CompactedError(`watch from revision ${from}: this store is at revision ${revision}; it was reset, so read the current state again`)
      }
      if (early) {
        unsubscribe()
        throw early
      }
      if (this.#closed) {
        unsubscribe()
        throw new ClosedError('the node is shutting down')
      }
      const ready = position === undefined ? { heartbeat: heartbeatMs } : { revision: position.revision, epoch: position.epoch, heartbeat: heartbeatMs }
      const streams = this.#streams
      return {
        status: 200,
        headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' },
        stream(sinkOut) {
          out = sinkOut
          let timer: ReturnType<typeof setInterval> | undefined
          const end = () => {
            if (!stop) return
            stop = undefined
            streams.delete(end)
            if (timer !== undefined) clearInterval(timer)
            unsubscribe()
            release()
            sinkOut.end()
          }
          stop = end
          streams.add(end)
          const queued = pending ?? []
          pending = undefined
          sinkOut.write(`retry: 1000\n\n`)
          for (const chunk of queued) sinkOut.write(chunk)
          sinkOut.write(`event: ${SSE_READY}\ndata: ${JSON.stringify(ready)}\n\n`)
          timer = setInterval(() => {
            if (!sinkOut.write(`: ping\n\n`)) end()
          }, heartbeatMs)
          ;(timer as { unref?: () => void }).unref?.()
          return end
        },
      }
    } catch (err) {
      release()
      throw err
    }
  }
}
