/**
 * A watch over HTTP: a server-sent-event stream read through the transport
 * (Node 20 has no EventSource, and EventSource cannot send a token), parsed
 * by `eventsource-parser`.
 *
 * Every change event's id is its revision. The watch remembers the last
 * revision it delivered (or, before any event, the store revision the node
 * reported when the stream opened) and, when the stream breaks, reconnects
 * with `Last-Event-ID` set to it, trying the node addresses in order with
 * backoff. The node replays what came after, and anything at or below the
 * remembered revision is dropped, so nothing is lost or doubled. When the
 * node no longer has that history, the sink gets a `CompactedError`; when no
 * node answers for `reconnectLimitMs`, an `UnavailableError`.
 *
 * @module
 */
import { createParser } from 'eventsource-parser'
import type { Unsubscribe, WatchSink } from '../../core/adapter'
import type { WatchEvent } from '../../core/adapter'
import { ClosedError, UnavailableError, ZarisError, errorFromJSON, isZarisError } from '../../core/errors'
import { SSE_ERROR, SSE_READY, errorBody, parseWith, readyEvent, stripEvent, watchEvent } from './protocol'
import type { Transport } from './transport'

/** What a watch needs from its adapter. */
export interface WatchContext {
  transport(): Promise<Transport>
  endpoints: readonly string[]
  /** The endpoint requests currently go to first. */
  preferred(): number
  prefer(index: number): void
  url(endpoint: string, op: string): string
  headers(): Record<string, string>
  /** Aborts when the adapter closes. */
  closed: AbortSignal
  /** Ms to open a stream (until its `ready` event). */
  timeoutMs: number
  /** Rounds over the endpoints before the first connection gives up. */
  rounds: number
  /** Ms of failed reconnects after which the watch ends with UnavailableError. */
  reconnectLimitMs: number
  /** Turns a non-200 answer into an error. */
  errorOf(status: number, body: string, endpoint: string): ZarisError
}

type Outcome = { kind: 'stopped' } | { kind: 'ended'; healthy: boolean } | { kind: 'failed'; error: Error; fatal: boolean }

const MAX_BACKOFF = 5_000

/**
 * Opens a watch; resolves once the node delivers every later event (its
 * `ready`), or when the sink was told that the history asked for is gone.
 */
export function openWatch(ctx: WatchContext, prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe> {
  return new RemoteWatch(ctx, prefix, sink, fromRevision).start()
}

class RemoteWatch {
  readonly #ctx: WatchContext
  readonly #prefix: string
  readonly #sink: WatchSink
  #last: number | undefined
  /** The epoch of the store this watch has seen events of; a resume against another fails plainly. */
  #epoch: string | undefined
  #stopped = false
  #attempt: AbortController | undefined
  #heartbeat = 15_000

  constructor(ctx: WatchContext, prefix: string, sink: WatchSink, fromRevision?: number) {
    this.#ctx = ctx
    this.#prefix = prefix
    this.#sink = sink
    this.#last = fromRevision
  }

  start(): Promise<Unsubscribe> {
    const unsubscribe = () => this.#stop()
    return new Promise((resolve, reject) => {
      let established = false
      const onReady = () => {
        if (!established) {
          established = true
          resolve(unsubscribe)
        }
      }
      this.#run(onReady, () => established).then(
        (end) => {
          if (end === undefined) {
            if (!established) reject(new ClosedError('the http adapter was closed while the watch was opening'))
            return
          }
          if (established) this.#sink.error(end)
          else if (isZarisError(end, 'COMPACTED')) {
            // As a local store does: the watch is set up, and its sink is told at once.
            this.#sink.error(end)
            resolve(() => {})
          } else reject(end)
        },
        (err) => (established ? this.#sink.error(err) : reject(err)),
      )
      this.#ctx.closed.addEventListener('abort', this.#onClose, { once: true })
      if (this.#ctx.closed.aborted) this.#stop()
    })
  }

  readonly #onClose = () => this.#stop()

  #stop(): void {
    this.#stopped = true
    this.#ctx.closed.removeEventListener('abort', this.#onClose)
    this.#attempt?.abort()
  }

  /** Connects, reads, reconnects; resolves the error that ends the watch, or undefined when stopped. */
  async #run(onReady: () => void, established: () => boolean): Promise<Error | undefined> {
    const ctx = this.#ctx
    const n = ctx.endpoints.length
    let index = ctx.preferred()
    let failures = 0
    let failingSince: number | undefined
    let backoff = 100
    let lastError: Error | undefined
    while (!this.#stopped) {
      const outcome = await this.#session(ctx.endpoints[index]!, index, () => {
        failures = 0
        failingSince = undefined
        backoff = 100
        onReady()
      })
      if (this.#stopped || outcome.kind === 'stopped') return undefined
      if (outcome.kind === 'failed' && outcome.fatal) return outcome.error
      // A full watcher table is reported to a new watch; an established one waits for a slot.
      if (outcome.kind === 'failed' && !established() && isZarisError(outcome.error, 'RATE_LIMITED')) return outcome.error
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
      if (!established() && failures >= n * ctx.rounds) {
        return unavailable(`no zaris node opened the watch at ${ctx.endpoints.join(', ')}`, lastError)
      }
      if (established() && Date.now() - failingSince > ctx.reconnectLimitMs) {
        return unavailable(`the watch lost its node and none answered for ${ctx.reconnectLimitMs} ms`, lastError)
      }
      index = (index + 1) % n
      if (failures % n === 0) {
        await pause(backoff * (0.5 + Math.random() / 2), ctx.closed)
        backoff = Math.min(backoff * 2, MAX_BACKOFF)
      }
    }
    return undefined
  }

  async #session(endpoint: string, index: number, onReady: () => void): Promise<Outcome> {
    const ctx = this.#ctx
    const attempt = new AbortController()
    this.#attempt = attempt
    if (this.#stopped) return { kind: 'stopped' }
    let ready = false
    let idle: ReturnType<typeof setTimeout> | undefined
    const arm = (ms: number) => {
      if (idle !== undefined) clearTimeout(idle)
      idle = unref(setTimeout(() => attempt.abort(new UnavailableError(`the watch stream at ${endpoint} went quiet`)), ms))
    }
    arm(ctx.timeoutMs)
    let failure: Outcome | undefined
    try {
      const transport = await ctx.transport()
      const query = `?prefix=${encodeURIComponent(this.#prefix)}${this.#epoch === undefined ? '' : `&epoch=${this.#epoch}`}`
      const headers: Record<string, string> = { ...ctx.headers(), accept: 'text/event-stream' }
      if (this.#last !== undefined) headers['last-event-id'] = String(this.#last)
      const res = await transport.send({ method: 'GET', url: ctx.url(endpoint, 'watch') + query, headers, signal: attempt.signal })
      if (res.status !== 200) {
        const error = ctx.errorOf(res.status, await res.text(), endpoint)
        // Server trouble and a full watcher table may pass; anything else will not.
        const fatal = !(res.status >= 500 || res.status === 429)
        return { kind: 'failed', error, fatal }
      }
      const decoder = new TextDecoder()
      const parser = createParser({
        onEvent: (message) => {
          if (failure) return
          try {
            if (message.event === SSE_READY) {
              const r = parseWith(readyEvent, JSON.parse(message.data), 'ready')
              this.#heartbeat = r.heartbeat
              if (r.revision !== undefined) this.#last = Math.max(this.#last ?? 0, r.revision)
              this.#epoch ??= r.epoch
              ready = true
              ctx.prefer(index)
              onReady()
            } else if (message.event === SSE_ERROR) {
              const { error } = parseWith(errorBody, { error: JSON.parse(message.data) }, 'error')
              const err = errorFromJSON(error)
              failure = { kind: 'failed', error: err, fatal: !(err.code === 'UNAVAILABLE' || err.code === 'CLOSED') }
            } else {
              const ev = stripEvent(parseWith(watchEvent, JSON.parse(message.data), 'event'))
              if (this.#last !== undefined && ev.revision <= this.#last) return
              this.#last = ev.revision
              deliver(this.#sink, ev)
            }
          } catch (err) {
            failure = { kind: 'failed', error: new ZarisError('INTERNAL', `the node sent a bad watch event: ${(err as Error).message}`), fatal: true }
          }
        },
      })
      for await (const chunk of res.chunks()) {
        parser.feed(decoder.decode(chunk, { stream: true }))
        // Once the stream is open, silence longer than three heartbeats means it is dead.
        arm(ready ? this.#heartbeat * 3 : ctx.timeoutMs)
        if (failure) {
          res.cancel()
          return failure
        }
        if (this.#stopped) {
          res.cancel()
          return { kind: 'stopped' }
        }
      }
      return this.#stopped ? { kind: 'stopped' } : { kind: 'ended', healthy: ready }
    } catch (err) {
      if (this.#stopped) return { kind: 'stopped' }
      if (failure) return failure
      const reason = attempt.signal.aborted ? attempt.signal.reason : err
      return ready ? { kind: 'ended', healthy: true } : { kind: 'failed', error: asError(reason), fatal: false }
    } finally {
      if (idle !== undefined) clearTimeout(idle)
      attempt.abort()
    }
  }
}

function deliver(sink: WatchSink, event: WatchEvent): void {
  try {
    sink.event(event)
  } catch {
    // A sink that throws must not end the stream for the events after it.
  }
}

function unavailable(message: string, cause: Error | undefined): UnavailableError {
  return new UnavailableError(cause ? `${message}: ${cause.message}` : message, { cause })
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err))
}

function unref<T>(timer: T): T {
  ;(timer as { unref?: () => void }).unref?.()
  return timer
}

/** Waits `ms`, or less if `signal` aborts; never rejects. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = unref(setTimeout(done, ms))
    signal.addEventListener('abort', done, { once: true })
  })
}
