/**
 * A watch of zaris/tabs: the changes of a key (or every key under a prefix)
 * made by this tab and every other tab on the namespace, full clients
 * included, in revision order, none missed.
 *
 * Every commit's records come on the namespace's BroadcastChannel, but two
 * tabs' messages may cross: a record past the next revision expected is a
 * gap, filled from the store's log (one readonly transaction, held back
 * while the page is frozen, see ../elect/store). A wake of the page reads
 * the log too. So that expiries show without a full client's sweep in some
 * tab, the watch expires what is due itself, at the earliest deadline.
 *
 * Events are buffered without bound until read, as a full client's are:
 * read them, or close the watch.
 *
 * @module
 */
import type { WatchEvent } from '../core/contract/adapter'
import { CompactedError } from '../core/contract/errors'
import { isReservedKey } from '../core/contract/reserved'
import type { LogRecord } from '../adapters/indexeddb/schema'
import { HISTORY, type TermStore } from '../elect/store'
import { earliestExpiry, readLog, sweepTx } from '../adapters/indexeddb/transactions'

/** Options of `tabs(...).watch`. */
export interface TabWatchOptions {
  /** Watch every key that starts with the given string, not just that key. */
  prefix?: boolean
  /** Ends the iteration quietly when aborted. */
  signal?: AbortSignal
  /** Deliver every event after this revision first; the iteration rejects with `CompactedError` when the log no longer keeps it. */
  fromRevision?: number
}

/**
 * A running watch: iterate it with `for await`, `close()` it when done.
 *
 * @example
 * const watch = app.watch('status:', { prefix: true })
 * await watch.ready
 * for await (const ev of watch) console.log(ev.type, ev.key, ev.revision)
 */
export class TabWatch implements AsyncIterableIterator<WatchEvent>, AsyncDisposable {
  /** Resolves once every later change reaches this watch. */
  readonly ready: Promise<void>
  readonly #store: TermStore
  readonly #key: string
  readonly #prefix: boolean
  readonly #signal: AbortSignal | undefined
  /** The last revision delivered (or skipped as before the start). */
  #last = -1
  #queue: WatchEvent[] = []
  #waiting: { resolve(r: IteratorResult<WatchEvent>): void; reject(err: unknown): void } | undefined
  #error: unknown
  #done = false
  #filling = false
  #again = false
  #held: LogRecord[] = []
  #sweepTimer: ReturnType<typeof setTimeout> | undefined
  #sweepAt = Infinity
  readonly #unlisten: () => void
  readonly #onClose: () => void
  readonly #onAbort = () => void this.close()

  /** @internal Made by `tabs(...).watch`. */
  constructor(store: TermStore, key: string, prefix: boolean, signal: AbortSignal | undefined, fromRevision: number | undefined, onClose: () => void) {
    this.#store = store
    this.#onClose = onClose
    this.#key = key
    this.#prefix = prefix
    this.#signal = signal
    this.#unlisten = store.listen((records) => this.#heard(records))
    signal?.addEventListener('abort', this.#onAbort)
    this.ready = this.#start(fromRevision)
    this.ready.catch(() => {})
  }

  async #start(fromRevision: number | undefined): Promise<void> {
    try {
      const { revision, records } = await this.#store.run((db) => readLog(db, fromRevision ?? Infinity))
      if (fromRevision !== undefined && fromRevision < revision && (records[0]?.revision ?? revision + 1) > fromRevision + 1) {
        throw new CompactedError(`the log no longer keeps revision ${fromRevision + 1}: watch from ${records[0]?.revision ?? revision} or later`)
      }
      this.#last = fromRevision ?? revision
      this.#deliver(records)
      this.#heard([])
      this.#arm(await this.#store.run(earliestExpiry))
    } catch (err) {
      this.#fail(err)
      throw err
    }
  }

  /** Records from the channel (none: the page woke, read the log). */
  #heard(records: LogRecord[]): void {
    if (this.#done || this.#last < 0) {
      if (!this.#done) this.#held.push(...records)
      return
    }
    const held = this.#held.length > 0 ? [...this.#held.splice(0), ...records].sort((a, b) => a.revision - b.revision) : records
    let gap = records.length === 0
    for (const r of held) {
      if (r.revision <= this.#last) continue
      if (r.revision !== this.#last + 1) {
        gap = true
        break
      }
      this.#deliver([r])
    }
    if (gap) void this.#fill()
    for (const r of records) for (const ev of r.events) if (ev.type === 'put' && ev.ttl !== undefined) this.#arm(Date.now() + ev.ttl)
  }

  /** Reads the log after the last revision delivered, until no gap is left. */
  async #fill(): Promise<void> {
    // A gap heard while a read is under way may lie past what that read sees: read again once it is done.
    if (this.#filling) return void (this.#again = true)
    this.#filling = true
    try {
      do {
        this.#again = false
        const { records } = await this.#store.run((db) => readLog(db, this.#last))
        if (records.length > 0 && records[0]!.revision > this.#last + 1) {
          throw new CompactedError(`the watch fell behind the log: revision ${this.#last + 1} is no longer kept`)
        }
        this.#deliver(records)
      } while (this.#again && !this.#done)
    } catch (err) {
      this.#fail(err)
    } finally {
      this.#filling = false
    }
  }

  #deliver(records: LogRecord[]): void {
    for (const r of records) {
      if (r.revision <= this.#last) continue
      this.#last = r.revision
      for (const ev of r.events) if (this.#matches(ev.key)) this.#push(ev)
    }
  }

  #matches(key: string): boolean {
    return !isReservedKey(key) && (this.#prefix ? key.startsWith(this.#key) : key === this.#key)
  }

  /** Sweeps at `at` (a store time), unless a sweep is due sooner already. */
  #arm(at: number | undefined): void {
    if (at === undefined || this.#done || at >= this.#sweepAt) return
    clearTimeout(this.#sweepTimer)
    this.#sweepAt = at
    this.#sweepTimer = setTimeout(() => void this.#sweep(), Math.min(2 ** 31 - 1, Math.max(0, at - Date.now()) + 1))
  }

  /** Expires what is due (the events come as any commit's) and arms for the earliest deadline left. */
  async #sweep(): Promise<void> {
    this.#sweepAt = Infinity
    try {
      const outcome = await this.#store.run((db) => sweepTx(db, Date.now(), HISTORY))
      if (outcome.records.length > 0) this.#store.tell(outcome)
      this.#arm(outcome.nextExpiry)
    } catch {
      // Closed, or the store failed: the next change with a TTL arms again.
    }
  }

  #push(ev: WatchEvent): void {
    const waiting = this.#waiting
    this.#waiting = undefined
    if (waiting) waiting.resolve({ value: ev, done: false })
    else this.#queue.push(ev)
  }

  #fail(err: unknown): void {
    if (this.#done) return
    this.#error = err
    this.#stop()
    this.#waiting?.reject(err)
    this.#waiting = undefined
  }

  /** The next event; waits for one. Rejects when the watch failed (`CompactedError`). */
  next(): Promise<IteratorResult<WatchEvent>> {
    const ev = this.#queue.shift()
    if (ev) return Promise.resolve({ value: ev, done: false })
    if (this.#error !== undefined) return Promise.reject(this.#error)
    if (this.#done) return Promise.resolve({ value: undefined, done: true })
    return new Promise((resolve, reject) => (this.#waiting = { resolve, reject }))
  }

  /** Ends the iteration (a `break` out of `for await` calls it) and closes the watch. */
  async return(): Promise<IteratorResult<WatchEvent>> {
    await this.close()
    return { value: undefined, done: true }
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  /** Stops the watch; a pending `next()` resolves done. */
  async close(): Promise<void> {
    if (this.#done) return
    this.#stop()
    this.#queue = []
    this.#waiting?.resolve({ value: undefined, done: true })
    this.#waiting = undefined
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  #stop(): void {
    this.#done = true
    this.#unlisten()
    clearTimeout(this.#sweepTimer)
    this.#signal?.removeEventListener('abort', this.#onAbort)
    this.#onClose()
  }
}
