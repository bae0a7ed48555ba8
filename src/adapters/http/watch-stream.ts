/**
 * The event stream of one HTTP adapter: a single server-sent-event
 * connection that follows every change of the namespace (prefix ''), read
 * through the transport (Node 20 has no EventSource, and EventSource cannot
 * send a token) and read by `./sse-reader`. The watch hub
 * (`./watch-hub`) shares it among all the adapter's watches.
 *
 * It hands on each change once, in revision order, with no gap:
 * - It remembers the last revision it handed on and which keys of it (one
 *   commit may change several keys under one revision). When the connection
 *   breaks it reconnects with backoff, trying the node addresses in order,
 *   and sends `Last-Event-ID` — the revision before, so a revision cut off
 *   halfway is replayed whole — and drops whatever it already handed on.
 * - Every resume carries the store's epoch (from the first `ready`), so a
 *   store that was reset (a memory node restarted) fails it plainly with
 *   `CompactedError` instead of passing its new history off as the old one;
 *   so does a resume older than the history the node keeps.
 * - A stream opened fresh starts after the revision the node reports in its
 *   first `ready`; one opened from a revision starts right after it. On the
 *   first connection nothing is handed on before `ready`.
 * - A resumed stream takes nothing from `ready`'s revision: a node in front
 *   of Redis may read its store's revision before every earlier event has
 *   reached the stream, and those events must still be delivered.
 *
 * Filtered (`prefixes` given): each connection asks for the changes under
 * the prefixes `prefixes()` names then, and reports them with the node's
 * stream id in `ready`; the node's `progress` events move the resume point
 * past changes the stream did not carry.
 *
 * When no node answers for `reconnectLimitMs` (or, before the first `ready`,
 * after every address was tried `rounds` times) the stream ends with
 * `UnavailableError`.
 *
 * @module
 */
import type { WatchEvent } from '../../core/contract/adapter'
import { UnavailableError, ZarisError, errorFromJSON, isZarisError } from '../../core/contract/errors'
import { BadAnswer, readError, readEvent, readProgress, readReady } from './answers'
import { SseReader } from './sse-reader'
import { SSE_ANSWER, SSE_ERROR, SSE_PROGRESS, SSE_READY } from './wire'
import type { Transport, TransportResponse } from './transport'

/** What a watch stream needs from its adapter. */
export interface WatchContext {
  transport(): Promise<Transport>
  endpoints: readonly string[]
  /** The endpoint requests currently go to first. */
  preferred(): number
  prefer(index: number): void
  url(endpoint: string, op: string): string
  headers(): Record<string, string>
  /** Ms to open a stream (until its `ready` event). */
  timeoutMs: number
  /** Rounds over the endpoints before the first connection gives up. */
  rounds: number
  /** Ms of failed reconnects after which the stream ends with UnavailableError. */
  reconnectLimitMs: number
  /** Turns a non-200 answer into an error. */
  errorOf(status: number, body: string, endpoint: string): ZarisError
  /** An `answer` event's data: the outcome of a commit that parked with `answerOn` (./stream-answers). */
  answer?(json: unknown): void
}

/** Where a stream reports to. */
export interface StreamListener {
  /**
   * The node delivers every later change. `first` on the first connection,
   * with `start`: the revision the stream starts after (undefined when a
   * fresh stream's node did not say).
   */
  ready(first: boolean, start: number | undefined, filtered?: Filtered): void
  /** One change, in revision order, never twice; `size` is its length on the wire. */
  event(event: WatchEvent, size: number): void
  /** The connection broke after `ready`; the stream is reconnecting. */
  interrupted(): void
  /** The stream is over: it cannot go on without a gap, or no node answered. */
  ended(error: Error): void
}

/** What a connection of a filtered stream carries: the node's id for it and its prefixes, after `resumedAfter`. */
export interface Filtered {
  /** Undefined when the node does not filter (it carries the whole namespace). */
  stream: string | undefined
  prefixes: readonly string[]
  /** The revision this connection carries the prefixes after: where it resumed, or started. */
  after: number
  /** The endpoint (index) the connection is to: filter requests go there. */
  endpoint: number
}

/** What one connection's events tell the rest of it. */
interface Session {
  /** Changes that came before the first connection's `ready`. */
  early: Array<{ event: WatchEvent; size: number }> | undefined
  index: number
  /** The revision the connection resumed after. */
  from: number | undefined
  prefixes: readonly string[] | undefined
  onReady: () => void
  ready: boolean
  failure: Outcome | undefined
}

type Outcome = { kind: 'stopped' } | { kind: 'ended'; healthy: boolean } | { kind: 'failed'; error: Error; fatal: boolean }

const MAX_BACKOFF = 5_000
/** The longest watch event line read (as the framed transport's answers): past it the stream fails, not memory. */
const MAX_EVENT_BYTES = 256 * 1024 * 1024

/** One SSE connection following a namespace, resumed without gap or duplicate until it ends for good. */
export class EventStream {
  readonly #ctx: WatchContext
  readonly #listener: StreamListener
  readonly #from: number | undefined
  readonly #prefixes: (() => readonly string[]) | undefined
  readonly #stopper = new AbortController()
  /** The last revision handed on, or where the stream starts. */
  #last: number | undefined
  /** The keys of `#last` handed on so far; undefined while `#last` is a start, not an event. */
  #partial: Set<string> | undefined
  /** The epoch of the store this stream follows; a resume against another fails plainly. */
  #epoch: string | undefined
  #opened = false
  #attempt: AbortController | undefined
  #response: TransportResponse | undefined
  #ref = true
  #heartbeat = 15_000

  /** Opens the stream: fresh, or `from` a revision (every change after it); filtered to `prefixes()` if given. */
  constructor(ctx: WatchContext, listener: StreamListener, from?: number, prefixes?: () => readonly string[]) {
    this.#ctx = ctx
    this.#listener = listener
    this.#from = from
    this.#prefixes = prefixes
    this.#last = from
    void this.#run().then(
      (error) => {
        if (error && !this.stopped) listener.ended(error)
      },
      (err) => {
        if (!this.stopped) listener.ended(asError(err))
      },
    )
  }

  /** The epoch of the store, once the node said. */
  get epoch(): string | undefined {
    return this.#epoch
  }

  /** The last revision handed on (or where the stream starts). */
  get last(): number | undefined {
    return this.#last
  }

  /** True once the node sent its first `ready`. */
  get opened(): boolean {
    return this.#opened
  }

  /** True if the stream was opened from a revision (not fresh). */
  get resumed(): boolean {
    return this.#from !== undefined
  }

  get stopped(): boolean {
    return this.#stopper.signal.aborted
  }

  /** Closes the connection for good; the listener hears nothing more. */
  stop(): void {
    this.#stopper.abort()
    this.#attempt?.abort()
  }

  /** Whether the connection keeps a Node process alive (a lingering stream lets go). */
  ref(on: boolean): void {
    this.#ref = on
    this.#response?.ref?.(on)
  }

  /** The revision to resume after: the one before a revision that may have been cut off halfway. */
  #resumeFrom(): number | undefined {
    if (this.#last === undefined) return undefined
    return this.#partial ? this.#last - 1 : this.#last
  }

  /** Hands `event` on unless it already was. */
  #accept(event: WatchEvent, size: number): void {
    const last = this.#last
    if (last !== undefined) {
      if (event.revision < last) return
      if (event.revision === last && (this.#partial === undefined || this.#partial.has(event.key))) return
    }
    if (event.revision !== last || this.#partial === undefined) {
      this.#last = event.revision
      this.#partial = new Set()
    }
    this.#partial.add(event.key)
    this.#listener.event(event, size)
  }

  /** Connects, reads, reconnects; resolves the error that ends the stream, or undefined when stopped. */
  async #run(): Promise<Error | undefined> {
    const ctx = this.#ctx
    const n = ctx.endpoints.length
    let index = ctx.preferred()
    let failures = 0
    let failingSince: number | undefined
    let backoff = 100
    let lastError: Error | undefined
    while (!this.stopped) {
      const outcome = await this.#session(ctx.endpoints[index]!, index, () => {
        failures = 0
        failingSince = undefined
        backoff = 100
      })
      if (this.stopped || outcome.kind === 'stopped') return undefined
      if (this.#opened) this.#listener.interrupted()
      if (outcome.kind === 'failed' && outcome.fatal) return outcome.error
      // A full watcher table is reported to a new stream; an established one waits for a slot.
      if (outcome.kind === 'failed' && !this.#opened && isZarisError(outcome.error, 'RATE_LIMITED')) return outcome.error
      if (outcome.kind === 'ended' && outcome.healthy) {
        // The stream was fine and ended (the node restarting, a proxy timeout): resume now.
        if (this.#last === undefined) {
          return new UnavailableError('the watch stream ended before the node told it a revision to resume from')
        }
        continue
      }
      if (outcome.kind === 'failed') lastError = outcome.error
      failures++
      failingSince ??= Date.now()
      if (!this.#opened && failures >= n * ctx.rounds) {
        return unavailable(`no zaris node opened the watch at ${ctx.endpoints.join(', ')}`, lastError)
      }
      if (this.#opened && Date.now() - failingSince > ctx.reconnectLimitMs) {
        return unavailable(`the watch lost its node and none answered for ${ctx.reconnectLimitMs} ms`, lastError)
      }
      index = (index + 1) % n
      if (failures % n === 0) {
        await pause(backoff * (0.5 + Math.random() / 2), this.#stopper.signal)
        backoff = Math.min(backoff * 2, MAX_BACKOFF)
      }
    }
    return undefined
  }

  async #session(endpoint: string, index: number, onReady: () => void): Promise<Outcome> {
    const ctx = this.#ctx
    const attempt = new AbortController()
    this.#attempt = attempt
    if (this.stopped) return { kind: 'stopped' }
    // One timer that looks at when the last chunk came, not one re-armed per chunk: a busy stream
    // (every event of the namespace) would pay a clearTimeout and a setTimeout for each.
    let idle: ReturnType<typeof setTimeout> | undefined
    let quietLimit = ctx.timeoutMs
    let lastChunk = Date.now()
    const arm = (ms: number) => {
      if (idle !== undefined) clearTimeout(idle)
      idle = unref(
        setTimeout(() => {
          const quiet = Date.now() - lastChunk
          if (quiet >= quietLimit) attempt.abort(new UnavailableError(`the watch stream at ${endpoint} went quiet`))
          else arm(quietLimit - quiet)
        }, ms),
      )
    }
    arm(quietLimit)
    let session: Session | undefined
    try {
      const transport = await ctx.transport()
      const prefixes = this.#prefixes?.()
      const filter = prefixes === undefined ? '' : `&prefixes=${encodeURIComponent(JSON.stringify(prefixes))}`
      const query = `?prefix=${this.#epoch === undefined ? '' : `&epoch=${this.#epoch}`}${filter}`
      const headers: Record<string, string> = { ...ctx.headers(), accept: 'text/event-stream' }
      const from = this.#resumeFrom()
      if (from !== undefined) headers['last-event-id'] = String(from)
      const res = await transport.send({ method: 'GET', url: ctx.url(endpoint, 'watch') + query, headers, signal: attempt.signal })
      if (res.status !== 200) {
        const error = ctx.errorOf(res.status, await res.text(), endpoint)
        // Server trouble and a full watcher table may pass; anything else will not.
        const fatal = !(res.status >= 500 || res.status === 429)
        return { kind: 'failed', error, fatal }
      }
      this.#response = res
      res.ref?.(this.#ref)
      // On the first connection, changes wait for `ready`: it says where a fresh stream starts.
      session = { early: this.#opened ? undefined : [], index, from, prefixes, onReady, ready: false, failure: undefined }
      const s = session
      const reader = new SseReader((type, data) => this.#message(s, type, data), MAX_EVENT_BYTES)
      let over: Outcome | undefined
      /** One chunk of the body; false when reading should stop. */
      const take = (chunk: Uint8Array): boolean => {
        if (this.stopped) {
          over = { kind: 'stopped' }
          return false
        }
        try {
          reader.feed(chunk)
        } catch (err) {
          s.failure ??= { kind: 'failed', error: asError(err), fatal: true }
        }
        // Once the stream is open, silence longer than three heartbeats means it is dead.
        lastChunk = Date.now()
        const limit = s.ready ? this.#heartbeat * 3 : ctx.timeoutMs
        if (limit !== quietLimit) {
          quietLimit = limit
          arm(limit)
        }
        over = s.failure
        return !over
      }
      // Where the transport hands chunks over as they are read, events reach the watches in that tick.
      if (res.pipe) await res.pipe((chunk) => void (take(chunk) || res.cancel()))
      else for await (const chunk of res.chunks()) if (!take(chunk)) break
      if (over) {
        res.cancel()
        return over
      }
      return this.stopped ? { kind: 'stopped' } : { kind: 'ended', healthy: s.ready }
    } catch (err) {
      if (this.stopped) return { kind: 'stopped' }
      if (session?.failure) return session.failure
      const reason = attempt.signal.aborted ? attempt.signal.reason : err
      return session?.ready ? { kind: 'ended', healthy: true } : { kind: 'failed', error: asError(reason), fatal: false }
    } finally {
      this.#response = undefined
      if (idle !== undefined) clearTimeout(idle)
      attempt.abort()
    }
  }

  /** One event of a connection's stream. */
  #message(s: Session, type: string, data: string): void {
    if (s.failure || this.stopped) return
    try {
      if (type === SSE_READY) {
        const r = readReady(JSON.parse(data))
        this.#heartbeat = r.heartbeat
        this.#epoch ??= r.epoch
        s.ready = true
        this.#ctx.prefer(s.index)
        s.onReady()
        const first = !this.#opened
        if (first) {
          this.#opened = true
          if (this.#from === undefined) this.#last = r.revision
        }
        const filtered = s.prefixes && { stream: r.stream, prefixes: s.prefixes, after: (first ? this.#last : s.from) ?? -1, endpoint: s.index }
        this.#listener.ready(first, first ? this.#last : undefined, filtered)
        const held = s.early ?? []
        s.early = undefined
        for (const e of held) this.#accept(e.event, e.size)
      } else if (type === SSE_PROGRESS) {
        // Every change under the prefixes up to it came: resume after it (not before a quiet spell).
        const revision = readProgress(JSON.parse(data))
        if (!s.early && (this.#last === undefined || revision >= this.#last)) {
          this.#last = revision
          this.#partial = undefined
        }
      } else if (type === SSE_ANSWER) {
        this.#ctx.answer?.(JSON.parse(data))
      } else if (type === SSE_ERROR) {
        const error = readError({ error: JSON.parse(data) })
        if (!error) throw new BadAnswer('error: expected { code, message }')
        const err = errorFromJSON(error)
        s.failure = { kind: 'failed', error: err, fatal: !(err.code === 'UNAVAILABLE' || err.code === 'CLOSED') }
      } else {
        const event = readEvent(JSON.parse(data))
        if (s.early) s.early.push({ event, size: data.length })
        else this.#accept(event, data.length)
      }
    } catch (err) {
      s.failure = { kind: 'failed', error: new ZarisError('INTERNAL', `the node sent a bad watch event: ${(err as Error).message}`), fatal: true }
    }
  }
}

function unavailable(message: string, cause: Error | undefined): UnavailableError {
  return new UnavailableError(cause ? `${message}: ${cause.message}` : message, { cause })
}

/** `err` as an `Error` (a thrown non-Error becomes one with its text). */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err))
}

function unref<T>(timer: T): T {
  ;(timer as { unref?: () => void }).unref?.()
  return timer
}

/**
 * Waits `ms`, or less if `signal` aborts; never rejects. Its timer keeps a
 * Node process alive only with `keepAlive` (a call waiting to retry is work
 * in progress, and must keep the process alive until it settles).
 */
export function pause(ms: number, signal: AbortSignal, keepAlive = false): Promise<void> {
  // A signal of its own to listen on: many calls pausing at once (a node restarting) add no listeners to `signal`,
  // which would pass Node's 10-listener warning.
  const own = AbortSignal.any([signal])
  return new Promise((resolve) => {
    if (own.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      own.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    if (!keepAlive) unref(timer)
    own.addEventListener('abort', done, { once: true })
  })
}
