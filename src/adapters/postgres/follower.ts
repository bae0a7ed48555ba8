/**
 * Watch delivery: one follower per namespace and connection reads the
 * namespace's log (`events`) after the earliest cursor of its subscribers,
 * and hands each event to the subscribers whose cursor it passes and whose
 * prefix it matches.
 *
 * The log is read by polling, one statement per read, woken early by
 * LISTEN/NOTIFY (`listener.ts`) where the connection allows it; correctness
 * never rests on a notification: a lost one only delays the next read to the
 * poll interval. Every write of a namespace holds its row while it takes its
 * revision, so revisions become visible in revision order, and a read after
 * a cursor never skips one that commits later.
 *
 * Gaps are detected, never papered over: the log keeps the most recent
 * events, and the store says up to which revision it dropped them
 * (`compacted`), so a subscriber whose cursor fell behind it, or a store that
 * went back or started over (another epoch), ends with a `CompactedError`.
 *
 * The follower also runs the namespace's expiry while it has subscribers: a
 * timer at the earliest deadline sweeps what came due, so watchers hear of an
 * expiry even when nobody reads or writes the key.
 *
 * @module
 */
import type { Unsubscribe, WatchSink } from '../../core/contract/adapter'
import { CompactedError } from '../../core/contract/errors'
import { systemClock, type TimerHandle } from '../../core/time/clock'
import { rowEvent, type EventRow } from './codec'
import type { Connection } from './connection'

/** The end of a revision: a cursor at (r, END) has seen every event of revision r. */
const END = 2 ** 31 - 1
/** Events per read. */
const BATCH = 500
/** How long after an expiry sweep that left fenced entries due to try again. */
const FENCED_RETRY_MS = 250
/** How long one mark keeps the namespace watched; a follower with subscribers renews it at a third of that. */
const WATCHED_MS = 30_000

interface Cursor {
  rev: number
  seq: number
}

interface Subscriber {
  prefix: string
  sink: WatchSink
  cursor: Cursor
  done: boolean
}

/** What the follower needs from the adapter. */
export interface FollowerIo {
  readonly connection: Connection
  readonly schema: string
  readonly namespace: string
  readonly callTimeout: number
  /** ms between reads while no notification can be relied on. */
  pollInterval(): number
}

interface Poll extends EventRow {
  head: string
  compacted: string
  epoch: string
  due_in: number | null
}

export class Follower {
  readonly #io: FollowerIo
  readonly #subscribers = new Set<Subscriber>()
  #epoch: string | undefined
  #highest = 0
  #running = false
  #again = false
  /** Ends the current pause of the read loop (or the last one, which is over). */
  #wake: (() => void) | undefined
  #expiry: TimerHandle | undefined
  #expiryAt = Infinity
  /** No sweep before this (a sweep just found only entries a fence holds). */
  #sweepNotBefore = 0
  /** When the namespace was last marked watched (0: never, by this follower). */
  #markedAt = 0

  constructor(io: FollowerIo) {
    this.#io = io
  }

  /** Subscribes from `fromRevision`, or from the store's revision now; resolves once established. */
  async subscribe(prefix: string, sink: WatchSink, fromRevision: number | undefined): Promise<Unsubscribe> {
    const head = await this.head()
    const start = fromRevision ?? head
    const sub: Subscriber = { prefix, sink, cursor: { rev: start, seq: END }, done: false }
    this.#subscribers.add(sub)
    this.notify()
    return () => this.#drop(sub)
  }

  /**
   * Marks the namespace watched (its commits NOTIFY while it is) and
   * answers its revision now: every commit after that revision notifies.
   */
  async head(): Promise<number> {
    const { connection, schema, namespace, callTimeout } = this.#io
    const r = await connection.query<{ revision: string }>('watch', `SELECT ${schema}.watch($1, ${WATCHED_MS}) AS revision`, [namespace], callTimeout)
    this.#markedAt = systemClock.now()
    return Number(r.rows[0]!.revision)
  }

  /** Something may have been written: read the log now (a notification, a new subscriber, a sweep). */
  notify(): void {
    if (this.#running) {
      this.#again = true
      this.#wake?.()
      return
    }
    this.#running = true
    void this.#run()
  }

  async #run(): Promise<void> {
    let failures = 0
    // Until the last subscriber leaves: each adapter ends its own watches as it closes, also one
    // whose subscribe was still under way (its tracking ends it on arrival).
    while (this.#subscribers.size > 0) {
      this.#again = false
      let full: boolean
      try {
        if (systemClock.now() - this.#markedAt > WATCHED_MS / 3) await this.head()
        full = await this.#read()
        failures = 0
      } catch {
        // Postgres is unreachable: read again later from the same cursors, nothing is lost.
        if (failures++ === 0) for (const s of this.#subscribers) s.sink.reconnecting?.()
        await this.#pause(Math.min(2_000, 50 * 2 ** failures))
        continue
      }
      if (full || this.#again) continue
      await this.#pause(this.#io.pollInterval())
    }
    // The expiry timer lives only as long as the loop: no subscriber is left to hear an expiry.
    this.#running = false
    systemClock.clearTimeout(this.#expiry as TimerHandle)
    this.#expiry = undefined
    this.#expiryAt = Infinity
  }

  /** Waits `ms`, or less if woken (a wake after the pause ended does nothing). */
  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        systemClock.clearTimeout(timer)
        resolve()
      }
      const timer = systemClock.setTimeout(wake, ms)
      this.#wake = wake
    })
  }

  /** One read of the log after the earliest cursor; true when it was cut short (more may follow). */
  async #read(): Promise<boolean> {
    const subs = [...this.#subscribers]
    if (subs.length === 0) return false
    let from = subs[0]!.cursor
    for (const s of subs) if (before(s.cursor, from)) from = s.cursor
    const { connection, schema, namespace, callTimeout } = this.#io
    const r = await connection.query<Poll>(
      'watch',
      `SELECT s.revision AS head, s.compacted, s.epoch,
         (SELECT extract(epoch FROM min(expires_at) - clock_timestamp()) * 1000 FROM ${schema}.entries WHERE ns = $1 AND expires_at IS NOT NULL) AS due_in,
         e.revision, e.seq, e.type, e.k, e.value, e.created, e.owner, e.ttl
       FROM ${schema}.stores s LEFT JOIN LATERAL (
         SELECT * FROM ${schema}.events WHERE ns = $1 AND (revision, seq) > ($2, $3) AND type IN ('p', 'd', 'e') ORDER BY revision, seq LIMIT ${BATCH}
       ) e ON true WHERE s.ns = $1`,
      [namespace, from.rev, from.seq],
      callTimeout,
    )
    if (r.rows.length === 0) return false // the namespace has never been written
    const first = r.rows[0]!
    const head = Number(first.head)
    const compacted = Number(first.compacted)
    if (this.#epoch !== undefined && first.epoch !== this.#epoch) {
      this.#failAll('the store started over (its tables were emptied or made again); read the current state and watch again')
      this.#epoch = first.epoch
      return false
    }
    this.#epoch = first.epoch
    if (head < this.#highest) {
      this.#failAll(`the store went back from revision ${this.#highest} to ${head} (Postgres was restored from an older backup); read the current state and watch again`)
      this.#highest = head
      return false
    }
    this.#highest = head
    this.#schedule(first.due_in)
    for (const sub of subs) {
      if (sub.cursor.rev < compacted || (sub.cursor.rev === compacted && sub.cursor.seq !== END)) {
        this.#fail(sub, new CompactedError(`watch from revision ${sub.cursor.rev}: the store no longer keeps the events after it (it keeps the most recent ones only); read the current state and watch from its revision`))
      }
    }
    const rows = first.revision === null ? [] : r.rows
    const full = rows.length === BATCH
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!
      const at: Cursor = { rev: Number(row.revision), seq: row.seq }
      // A read that was not cut short ends with the last event of its last revision: that closes it. Within
      // the read a cursor stays at its event (the next one, of this revision or a later, is after it).
      const cursor = i === rows.length - 1 && !full ? { rev: at.rev, seq: END } : at
      const ev = rowEvent(row)
      for (const sub of subs) {
        if (sub.done || !before(sub.cursor, at)) continue
        sub.cursor = cursor
        if (!ev.key.startsWith(sub.prefix)) continue
        try {
          sub.sink.event(ev)
        } catch {
          // A sink that throws must not stop delivery to the others.
        }
      }
    }
    return full
  }

  /** Sweeps the namespace's expiries at its earliest deadline (ms from now), while someone watches. */
  #schedule(dueIn: number | null): void {
    if (dueIn === null) return
    const now = systemClock.now()
    const at = Math.max(now + Math.max(0, Math.ceil(dueIn)) + 1, this.#sweepNotBefore)
    const delay = at - now
    if (at >= this.#expiryAt) return
    systemClock.clearTimeout(this.#expiry as TimerHandle)
    this.#expiryAt = at
    this.#expiry = systemClock.setTimeout(() => {
      this.#expiry = undefined
      this.#expiryAt = Infinity
      void this.#sweep()
    }, delay)
  }

  async #sweep(): Promise<void> {
    if (this.#subscribers.size === 0) return
    const { connection, schema, namespace, callTimeout } = this.#io
    try {
      const r = await connection.query<{ left: number }>('expiry', `SELECT ${schema}.sweep($1, NULL) AS left`, [namespace], callTimeout)
      // Entries a fence holds past their deadline: try again soon (they expire once its transaction ends).
      if (r.rows[0]!.left > 0) {
        this.#sweepNotBefore = systemClock.now() + FENCED_RETRY_MS
        this.#schedule(FENCED_RETRY_MS)
      }
    } catch {
      // Postgres is unreachable: the read loop's next read schedules it again.
    }
    this.notify()
  }

  #fail(sub: Subscriber, error: Error): void {
    if (sub.done) return
    this.#drop(sub)
    try {
      sub.sink.error(error)
    } catch {
      // as in #read
    }
  }

  #failAll(message: string): void {
    for (const sub of [...this.#subscribers]) this.#fail(sub, new CompactedError(message))
  }

  #drop(sub: Subscriber): void {
    sub.done = true
    this.#subscribers.delete(sub)
  }
}

/** Whether cursor `a` is before `b`. */
function before(a: Cursor, b: Cursor): boolean {
  return a.rev < b.rev || (a.rev === b.rev && a.seq < b.seq)
}
