/**
 * Watches of one etcd connection: every subscription is an etcd watcher
 * (from its own revision, over its own key range) on one gRPC stream.
 *
 * Each subscription keeps `next`, the first revision it has not seen in full
 * (etcd sends a revision's events in one response). When the stream breaks
 * — a member killed, paused or cut off — it is opened again on a member of
 * the endpoints list and every watcher is created again from its `next`: no
 * event is lost or comes twice. A watcher whose `next` etcd has compacted
 * away gets a `CompactedError`, as when a subscriber asks for history that
 * old. A paused member sends nothing and breaks nothing: a progress request
 * every {@link PROBE_MS} that gets no answer within {@link DEAD_MS} counts
 * as a broken stream.
 *
 * @module
 */
import type { IWatchRequest, IWatchResponse } from 'etcd3'
import type { Unsubscribe, WatchSink } from '../../core/contract/adapter'
import { systemClock, type TimerHandle } from '../../core/time/clock'
import { CompactedError, UnavailableError } from '../../core/contract/errors'
import { toWatchEvents } from './events'
import type { Layout } from './layout'

/** The stream as etcd3 gives it. */
export interface WatchStream {
  write(item: IWatchRequest): void
  end(): void
  cancel(): void
  on(event: 'data', fn: (res: IWatchResponse) => void): this
  on(event: 'error', fn: (err: Error) => void): this
  on(event: 'end', fn: () => void): this
}

export const PROBE_MS = 1_000
export const DEAD_MS = 3_000
const MAX_BACKOFF_MS = 1_000

interface Subscription {
  id: number
  layout: Layout
  range: { key: Buffer; range_end: Buffer }
  sink: WatchSink
  /** The first revision not yet delivered in full; 0 until etcd says where a watch without one starts. */
  next: number
  ready: (err?: Error) => void
  /** Told the first revision watched, once, when etcd creates the watcher. */
  started?: (first: number) => void
}

export class WatchHub {
  readonly #open: () => Promise<WatchStream>
  readonly #subs = new Map<number, Subscription>()
  #ids = 0
  #stream: WatchStream | undefined
  #connecting = false
  #closed = false
  #backoff = 50
  #lastData = 0
  #probe: TimerHandle | undefined

  constructor(open: () => Promise<WatchStream>) {
    this.#open = open
  }

  /**
   * Watches the zaris keys under `prefix` from revision `from` (the first
   * revision to deliver; 0 for "from now"). Resolves once etcd has created
   * the watcher; `started`, if given, is told first the first revision it
   * watches (for "from now": the one after etcd's revision then).
   */
  subscribe(layout: Layout, prefix: string, sink: WatchSink, from: number, timeoutMs: number, started?: (first: number) => void): Promise<Unsubscribe> {
    const id = ++this.#ids
    return new Promise<Unsubscribe>((resolve, reject) => {
      const unsubscribe = () => this.#drop(id)
      const timer = systemClock.setTimeout(() => {
        unsubscribe()
        reject(new UnavailableError(`etcd did not start a watch within ${timeoutMs} ms`))
      }, timeoutMs)
      this.#subs.set(id, {
        id,
        layout,
        range: layout.prefix(prefix),
        sink,
        next: from,
        started,
        ready: (err) => {
          systemClock.clearTimeout(timer)
          if (err) {
            unsubscribe()
            reject(err)
          } else resolve(unsubscribe)
        },
      })
      if (this.#stream) this.#create(this.#subs.get(id)!)
      else this.#connect()
    })
  }

  close(): void {
    this.#closed = true
    for (const id of [...this.#subs.keys()]) this.#drop(id)
    this.#teardown()
  }

  #drop(id: number): void {
    if (!this.#subs.delete(id)) return
    try {
      this.#stream?.write({ cancel_request: { watch_id: id } })
    } catch {
      // the stream is already gone
    }
    if (this.#subs.size === 0) this.#teardown()
  }

  #create(sub: Subscription): void {
    const req: IWatchRequest['create_request'] = { ...sub.range, watch_id: sub.id, progress_notify: true }
    if (sub.next > 0) req.start_revision = sub.next
    this.#stream!.write({ create_request: req })
  }

  #connect(): void {
    if (this.#connecting || this.#stream || this.#closed || this.#subs.size === 0) return
    this.#connecting = true
    this.#open().then(
      (stream) => {
        this.#connecting = false
        if (this.#closed || this.#subs.size === 0) {
          stream.cancel()
          return
        }
        this.#stream = stream
        this.#lastData = systemClock.now()
        stream.on('data', (res) => this.#onData(stream, res))
        stream.on('error', () => this.#lost(stream))
        stream.on('end', () => this.#lost(stream))
        for (const sub of this.#subs.values()) this.#create(sub)
        this.#schedule()
      },
      () => {
        this.#connecting = false
        this.#retry()
      },
    )
  }

  #retry(): void {
    if (this.#closed || this.#subs.size === 0) return
    const delay = this.#backoff
    this.#backoff = Math.min(MAX_BACKOFF_MS, this.#backoff * 2)
    systemClock.setTimeout(() => this.#connect(), delay)
  }

  #lost(stream: WatchStream): void {
    if (this.#stream !== stream) return
    this.#stream = undefined
    for (const sub of this.#subs.values()) sub.sink.reconnecting?.()
    try {
      stream.cancel()
    } catch {
      // already closed
    }
    this.#retry()
  }

  #teardown(): void {
    if (this.#probe !== undefined) systemClock.clearTimeout(this.#probe)
    this.#probe = undefined
    const stream = this.#stream
    this.#stream = undefined
    try {
      stream?.cancel()
    } catch {
      // already closed
    }
  }

  /** Every PROBE_MS: ask for progress; a stream silent for DEAD_MS is dead. */
  #schedule(): void {
    if (this.#probe !== undefined) return
    this.#probe = systemClock.setTimeout(() => {
      this.#probe = undefined
      const stream = this.#stream
      if (!stream) return
      if (systemClock.now() - this.#lastData > DEAD_MS) {
        this.#lost(stream)
        return
      }
      try {
        stream.write({ progress_request: {} })
      } catch {
        this.#lost(stream)
        return
      }
      this.#schedule()
    }, PROBE_MS)
  }

  #onData(stream: WatchStream, res: IWatchResponse): void {
    if (this.#stream !== stream) return
    this.#lastData = systemClock.now()
    this.#backoff = 50
    const sub = this.#subs.get(Number(res.watch_id))
    if (!sub) return // a cancelled watcher's last words, or a progress answer for the whole stream
    if (res.canceled) {
      this.#subs.delete(sub.id)
      const compacted = Number(res.compact_revision)
      const err =
        compacted > 0
          ? new CompactedError(`etcd has compacted its history past revision ${sub.next - 1} (oldest kept: ${compacted}); resume from a newer revision`)
          : new UnavailableError(`etcd cancelled the watch: ${res.cancel_reason || 'no reason given'}`)
      sub.ready()
      sub.sink.error(err)
      return
    }
    if (res.created) {
      if (sub.next === 0) sub.next = Number(res.header.revision) + 1
      sub.started?.(sub.next)
      sub.started = undefined
      sub.ready()
      return
    }
    if (res.events.length === 0) {
      // A progress notification: every revision up to the header's has been sent.
      sub.next = Math.max(sub.next, Number(res.header.revision) + 1)
      return
    }
    sub.next = Number(res.events[res.events.length - 1]!.kv.mod_revision) + 1
    for (const ev of toWatchEvents(sub.layout, res.events)) {
      if (!this.#subs.has(sub.id)) return
      sub.sink.event(ev)
    }
  }
}
