/**
 * What the adapters of one page share per namespace: the database
 * connection, the BroadcastChannel, the expiry timer, the watch feed and the
 * commit queue.
 *
 * Commits that arrive while a transaction is in flight wait and then go
 * together in the next one (group commit), each still with its own revision
 * and result. Many clients of a page contending for one lock thus cost one
 * transaction per wave instead of one each.
 *
 * Every transaction begins through {@link SharedStore.run}, which holds it
 * back while the page is frozen and begins it again when a freeze aborted it
 * (./connection says why).
 *
 * @module
 */
import type { Check, CommitResult, Op } from '../../core/contract/adapter'
import type { Clock, TimerHandle } from '../../core/time/clock'
import { ClosedError, isZarisError, UnavailableError } from '../../core/contract/errors'
import { Feed } from './feed'
import { Connection } from './connection'
import { openStore, type Database } from './schema'
import { commitBatch, earliestExpiry, readLog, sweepTx, type CommitRequest, type Outcome, type ThroughGate } from './transactions'
import { counted } from '../kit/write'

interface Queued {
  request: CommitRequest
  resolve(result: CommitResult): void
  reject(error: unknown): void
}

/** The most commits one transaction takes from the queue. */
const BATCH = 256

const stores = new WeakMap<Clock, Map<string, SharedStore>>()

export class SharedStore {
  readonly namespace: string
  readonly historySize: number
  readonly clock: Clock
  readonly feed: Feed
  readonly #key: string
  readonly #channel: BroadcastChannel
  #refs = 0
  #db: Promise<Connection> | undefined
  /** The open connection, once `#db` resolved: what a freeze aborts the transactions of, at once. */
  #connection: Connection | undefined
  /** Set from the page's `freeze` event to its `resume`: no transaction begins meanwhile. */
  #frozen: { resumed: Promise<void>; resume(): void } | undefined
  /** How many times the page froze: a transaction that failed across a freeze was aborted by it. */
  #freezes = 0
  #gone = false
  #closed = false
  #queue: Queued[] = []
  #committing = false
  #timer: TimerHandle | undefined
  #timerAt = Infinity
  #sweeping = false
  #sweepAgain = false
  /** The highest revision this page has seen the store reach (a hint for the next commit's read). */
  #revision = 0
  readonly #onWake = () => {
    const frozen = this.#frozen
    this.#frozen = undefined
    frozen?.resume()
    this.#wake()
  }
  readonly #onFreeze = () => {
    this.#freezes++
    if (!this.#frozen) {
      let resume!: () => void
      const resumed = new Promise<void>((r) => (resume = r))
      this.#frozen = { resumed, resume }
    }
    this.#connection?.abortOpen()
  }
  /**
   * Going hidden is no wake, and may be a tab closing: a transaction begun
   * then is never finished, and IndexedDB holds every other tab's writes
   * behind it until the browser tears the page down (bench/FINDINGS.md §18).
   */
  readonly #onShown = (ev: Event) => {
    if ((ev.currentTarget as Document).visibilityState !== 'hidden') this.#wake()
  }

  /** The page's store of a namespace, shared by every adapter that asks; {@link release} when done. */
  static acquire(namespace: string, historySize: number, clock: Clock): SharedStore {
    let byKey = stores.get(clock)
    if (!byKey) stores.set(clock, (byKey = new Map()))
    const key = `${historySize}\0${namespace}`
    let store = byKey.get(key)
    if (!store) byKey.set(key, (store = new SharedStore(namespace, historySize, clock, key)))
    store.#refs++
    return store
  }

  private constructor(namespace: string, historySize: number, clock: Clock, key: string) {
    this.namespace = namespace
    this.historySize = historySize
    this.clock = clock
    this.#key = key
    this.feed = new Feed({ historySize, log: (after) => this.run((db) => readLog(db, after)) })
    this.#channel = new BroadcastChannel(`zaris:idb:${namespace}`)
    this.#channel.onmessage = (ev: MessageEvent<Outcome>) => this.#received(ev.data)
    const doc = (globalThis as { document?: Document }).document
    doc?.addEventListener('visibilitychange', this.#onShown)
    doc?.addEventListener('resume', this.#onWake)
    doc?.addEventListener('freeze', this.#onFreeze)
  }

  /** The open database, opened on first use. */
  db(): Promise<Database> {
    if (this.#closed) return Promise.reject(new ClosedError('the indexeddb store is closed'))
    if (this.#gone) {
      return Promise.reject(new UnavailableError(`the IndexedDB database of ${JSON.stringify(this.namespace)} was deleted or upgraded by another tab`))
    }
    if (!this.#db) {
      const opening = openStore(this.namespace, () => this.#onGone()).then((db) => (this.#connection = new Connection(db)))
      this.#db = opening
      opening.then(
        () => {
          void this.feed.start().catch(() => {})
          // Closed or gone before it was read: nothing to expire here.
          this.run(earliestExpiry).then((at) => this.#armExpiry(at), () => {})
        },
        // A failed open is retried by the next call (a release meanwhile cleared it already, and closed the store).
        () => (this.#db = undefined),
      )
    }
    return this.#db
  }

  /**
   * Runs `fn`, which begins its transaction at once on the database it is
   * given, once the page runs (not frozen) and the database is open; again
   * when a freeze aborted it meanwhile (it wrote nothing). Every transaction
   * of the store begins here.
   */
  async run<T>(fn: (db: Database) => Promise<T>): Promise<T> {
    for (;;) {
      if (this.#frozen) await this.#frozen.resumed
      const db = await this.db()
      // Frozen while the database opened (a message runs in a frozen page): wait again.
      if (this.#frozen) continue
      const freezes = this.#freezes
      try {
        return await fn(db)
      } catch (err) {
        if (this.#freezes === freezes || this.#closed) throw err
      }
    }
  }

  /** Queues a commit for the next transaction. */
  commit(checks: Check[], ops: Op[], gate?: ThroughGate): Promise<CommitResult> {
    return new Promise<CommitResult>((resolve, reject) => {
      this.#queue.push({ request: { checks, ops, gate }, resolve, reject })
      if (!this.#committing) void this.#flush()
    })
  }

  async #flush(): Promise<void> {
    this.#committing = true
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, BATCH)
        try {
          const requests = batch.map((q) => q.request)
          const { results, outcome } = await this.run((db) => commitBatch(db, requests, () => this.clock.now(), this.historySize, this.#revision, counted))
          this.#announce(outcome)
          batch.forEach((q, i) => {
            const r = results[i]!
            if (r instanceof Error) q.reject(r)
            else q.resolve(r)
          })
        } catch (err) {
          const error = isZarisError(err) ? err : new UnavailableError(`IndexedDB refused the commit: ${(err as Error).message}`, { cause: err })
          for (const q of batch) q.reject(error)
        }
      }
    } finally {
      this.#committing = false
    }
  }

  /**
   * Runs a readwrite transaction made elsewhere (the reaper's) on the open
   * database and announces what it did, as a commit's outcome is.
   */
  async write(tx: (db: Database, now: number) => Promise<Outcome>): Promise<Outcome> {
    const outcome = await this.run((db) => tx(db, this.clock.now()))
    this.#announce(outcome)
    return outcome
  }

  /** Tells this page's watchers and every other tab what a transaction did. */
  #announce(outcome: Outcome): void {
    if (outcome.records.length === 0 && outcome.nextExpiry === undefined) return
    try {
      this.#channel.postMessage(outcome)
    } catch {
      // The channel closed under us; other tabs catch up from the log.
    }
    this.#received(outcome)
  }

  #received(outcome: Outcome): void {
    const last = outcome.records[outcome.records.length - 1]
    if (last && last.revision > this.#revision) this.#revision = last.revision
    this.feed.receive(outcome.records)
    this.#armExpiry(outcome.nextExpiry)
  }

  /** Makes sure this page's expiry timer fires by `at` (store time). */
  armExpiry(at: number): void {
    this.#armExpiry(at)
  }

  #armExpiry(at: number | undefined): void {
    if (at === undefined || this.#closed || at >= this.#timerAt) return
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer)
    this.#timerAt = at
    this.#timer = this.clock.setTimeout(() => {
      this.#timer = undefined
      this.#timerAt = Infinity
      void this.#sweep()
    }, at - this.clock.now())
  }

  /** Commits the expiry of what is due; whichever tab gets there first does it. */
  async #sweep(): Promise<void> {
    if (this.#sweeping) {
      this.#sweepAgain = true
      return
    }
    this.#sweeping = true
    try {
      do {
        this.#sweepAgain = false
        this.#announce(await this.run((db) => sweepTx(db, this.clock.now(), this.historySize)))
      } while (this.#sweepAgain && !this.#closed)
    } catch {
      // Closed or deleted under us; another tab sweeps.
    } finally {
      this.#sweeping = false
    }
  }

  /** The page woke (shown again, unfrozen): catch up on what it may have slept through. */
  #wake(): void {
    if (!this.#db) return // never used, or released (its listeners are gone too)
    this.feed.poll()
    void this.#sweep()
  }

  #onGone(): void {
    this.#gone = true
    this.#connection?.close()
  }

  /** Drops one reference; the last one closes the connection, channel and timer. */
  async release(): Promise<void> {
    if (--this.#refs > 0) return
    this.#closed = true
    stores.get(this.clock)!.delete(this.#key)
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer)
    const doc = (globalThis as { document?: Document }).document
    doc?.removeEventListener('visibilitychange', this.#onShown)
    doc?.removeEventListener('resume', this.#onWake)
    doc?.removeEventListener('freeze', this.#onFreeze)
    this.feed.clear()
    this.#channel.close()
    const db = this.#db
    this.#db = undefined
    this.#frozen?.resume()
    if (db) await db.then((d) => d.close(), () => {})
  }
}
