/**
 * One open watch stream of the node (SSE): its writes, heartbeat, end, and,
 * on a filtered stream, the prefixes it carries.
 *
 * A filtered stream keeps two revisions so that a change of its prefixes
 * loses nothing and a quiet stream still moves its resume point:
 * - `handed`: the newest revision the store handed the stream (written or
 *   filtered out). A `filter` request answers it: every change after it
 *   under the new prefixes is written from then on; the client reads the
 *   ones up to it from the history (`GET events`).
 * - `complete`: the newest revision all of whose changes went by (a revision
 *   is complete once the next one starts, or a history page ends past it).
 *   A `progress` event sends it after {@link PROGRESS_EVERY} changes
 *   filtered out in a row, and at a heartbeat instead of the ping, so that a
 *   resume after a long quiet spell starts near the store's revision, not at
 *   the stream's last change (whose history may be gone).
 *
 * @module
 */
import type { HistoryPage, Unsubscribe, WatchEvent } from '../core/contract/adapter'
import { SSE_ANSWER, SSE_ERROR, SSE_PROGRESS, SSE_READY } from '../adapters/http/wire'
import { ParkConnection } from './parking'
import { toWire, type StreamSink } from './reply'
import type { PrefixFilter } from './stream-filter'

/** Changes filtered out in a row after which a filtered stream sends `progress`. */
export const PROGRESS_EVERY = 256

/** What `filter` answers: the stream carries every change under its prefixes after `revision`. */
export interface Refiltered {
  revision: number
  version: number
}

/** One open SSE stream. */
export class SseStream {
  stopped = false
  /** True once `ready` went out: the stream follows the store live (a filter may change only now). */
  live = false
  readonly id: string | undefined
  readonly #out: StreamSink
  readonly #ready: object
  readonly #onStop: () => void
  readonly #timer: ReturnType<typeof setInterval>
  #unsubscribe: Unsubscribe | undefined
  #filter: PrefixFilter | undefined
  #version = 0
  #appliedAt = 0
  #handed: number | undefined
  #complete: number | undefined
  /** The newest revision the client knows complete: the last change written or progress sent. */
  #told: number | undefined
  #skipped = 0
  /** The commits parked with their answer due on this stream (`answerOn`): bounded as a connection's, dropped with the stream. */
  #parks: ParkConnection | undefined

  /** `filter`, `id`: a filtered stream; `start`: the revision it starts after, when known. */
  constructor(out: StreamSink, ready: object, heartbeatMs: number, onStop: () => void, filtered?: { filter: PrefixFilter; id: string; start: number | undefined }) {
    this.#out = out
    this.#onStop = onStop
    this.#filter = filtered?.filter
    this.id = filtered?.id
    this.#handed = filtered?.start
    this.#complete = filtered?.start
    this.#told = filtered?.start
    this.#ready = filtered ? { ...ready, stream: filtered.id } : ready
    // From the start: a long catch-up with nothing for this prefix still shows the client a live stream.
    this.#timer = setInterval(() => this.#beat(), heartbeatMs)
    ;(this.#timer as { unref?: () => void }).unref?.()
  }

  /** Sends a chunk; false when the socket asks to wait for drain. */
  write(chunk: string): boolean {
    if (this.stopped) return false
    return this.#out.write(chunk)
  }

  /** A change from the store (live, or from a history page); false when the socket asks to wait. */
  event(ev: WatchEvent): boolean {
    const filter = this.#filter
    if (filter) {
      const handed = this.#handed
      if (handed === undefined || ev.revision > handed) {
        if (handed !== undefined) this.#complete = handed
        this.#handed = ev.revision
      }
      if (!filter.match(ev.key)) {
        if (++this.#skipped >= PROGRESS_EVERY) this.#progress()
        return true
      }
      this.#skipped = 0
      this.#told = ev.revision - 1
    }
    return this.write(eventChunk(ev))
  }

  /** A page of history: its changes, then everything up to `through` is complete. */
  page(page: HistoryPage): boolean {
    let room = true
    for (const ev of page.events) room = this.event(ev)
    if (this.#filter && (this.#handed === undefined || page.through > this.#handed)) this.#handed = this.#complete = page.through
    return room
  }

  /** The prefixes of a filtered stream. */
  get filter(): PrefixFilter | undefined {
    return this.#filter
  }

  /** Replaces a filtered stream's prefixes, once per version (a repeat gets the first answer). */
  refilter(version: number, filter: PrefixFilter): Refiltered {
    if (version > this.#version) {
      this.#filter = filter
      this.#version = version
      this.#appliedAt = this.#handed ?? 0
    }
    return { revision: this.#appliedAt, version: this.#version }
  }

  /** The parking side of this stream, for commits answered on it (made on first use). */
  get parks(): ParkConnection {
    this.#parks ??= new ParkConnection()
    if (this.stopped) this.#parks.close()
    return this.#parks
  }

  /** The outcome of a parked commit sent with `answerOn` naming this stream (`json`: its commit answer, or `{ code, message }` with `failed`). */
  answer(requestId: string, json: string, failed = false): void {
    this.write(`event: ${SSE_ANSWER}\ndata: {"requestId":${JSON.stringify(requestId)},"${failed ? 'error' : 'result'}":${json}}\n\n`)
  }

  drained(): Promise<void> {
    return new Promise((resolve) => this.#out.drain(resolve))
  }

  subscribed(unsubscribe: Unsubscribe): void {
    this.#unsubscribe = unsubscribe
  }

  ready(): void {
    this.live = true
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
    this.#parks?.close()
    this.#onStop()
    this.#out.end()
  }

  #beat(): void {
    if (this.#skipped > 0 && this.live && this.#progress()) return
    this.write(`: ping\n\n`)
  }

  /** Tells the client how far the stream is complete; false if that is nothing new. */
  #progress(): boolean {
    this.#skipped = 0
    const complete = this.#complete
    if (complete === undefined || (this.#told !== undefined && complete <= this.#told)) return false
    this.#told = complete
    this.write(`event: ${SSE_PROGRESS}\ndata: {"revision":${complete}}\n\n`)
    return true
  }
}

/** The last event written and its chunk: a store hands one event object to every stream it goes to. */
let lastEvent: WatchEvent | undefined
let lastChunk = ''

/** An event as SSE, serialized once however many streams it goes to. */
export function eventChunk(ev: WatchEvent): string {
  if (ev !== lastEvent) {
    lastChunk = `id: ${ev.revision}\ndata: ${JSON.stringify(ev)}\n\n`
    lastEvent = ev
  }
  return lastChunk
}
