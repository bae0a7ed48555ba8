/**
 * The little of `zaris://idb` an election needs, on the same database,
 * channels and Web Lock names as the IndexedDB adapter, and through its own
 * transaction code (../adapters/indexeddb/transactions: one definition of the
 * format): a commit (one readwrite transaction, announced to every tab as
 * the adapter announces its own), a read of one entry, the news of other
 * tabs' commits, and the liveness registration that lets a full client's
 * reaper end this tab's term at once when the tab closes.
 *
 * What it leaves out, and why that is safe: no change feed (an election
 * cares about one key's latest state, so a record is applied only if its
 * revision is above the last one seen, and the entry is read again on wake),
 * no expiry sweep (an expired entry is absent to every read and check, and
 * the commit that takes the key expires it in its own transaction), no
 * group commit (one election commits a few times per TTL).
 *
 * A frozen page gets no IndexedDB results but still runs BroadcastChannel
 * handlers: as in the adapter (../adapters/indexeddb/connection), its
 * `freeze` aborts every transaction it has open and none begins until
 * `resume`, so a frozen tab never holds up another tab's commit.
 *
 * @module
 */
import type { Check, CommitResult, Op } from '../core/contract/adapter'
import { ClosedError, isZarisError, UnavailableError } from '../core/contract/errors'
import { randomHex } from '../core/contract/ids'
import { Connection } from '../adapters/indexeddb/connection'
import { openStore, type LogRecord } from '../adapters/indexeddb/schema'
import { commitBatch, readEntry, type Outcome, type ThroughGate } from '../adapters/indexeddb/transactions'
import type { Stored } from '../adapters/kit/write'

/** How many revisions the log keeps: the IndexedDB adapter's default, so both trim alike. */
export const HISTORY = 10_000

/** Hears the records of a commit; `local` when this page's store made it (another tab's, or a wake's empty list, otherwise). */
export type Listener = (records: LogRecord[], local?: boolean) => void

export class TermStore {
  readonly namespace: string
  /** The Web Locks API, where the page has it. */
  readonly locks: LockManager | undefined
  #db: Promise<Connection> | undefined
  #connection: Connection | undefined
  readonly #channel: BroadcastChannel
  readonly #listeners = new Set<Listener>()
  #frozen: { resumed: Promise<void>; resume(): void } | undefined
  #freezes = 0
  #closed = false
  /** The highest revision this page saw: a hint for the next commit's read of the revision. */
  #revision = 0
  readonly #registered = new Map<string, Promise<void>>()
  /** This page's liveness registrations: what a page being discarded announces gone. */
  readonly #nonces: Array<{ owner: string; nonce: string }> = []
  readonly #letGo = new AbortController()
  readonly #onFreeze = () => {
    this.#freezes++
    if (!this.#frozen) {
      let resume!: () => void
      const resumed = new Promise<void>((r) => (resume = r))
      this.#frozen = { resumed, resume }
    }
    this.#connection?.abortOpen()
  }
  readonly #onResume = () => {
    const frozen = this.#frozen
    this.#frozen = undefined
    frozen?.resume()
    for (const fn of this.#listeners) fn([])
  }
  /** A page being discarded says its registrations are gone, as the adapter's liveness does. */
  readonly #onHide = (ev: Event) => {
    if ((ev as PageTransitionEvent).persisted) return
    this.#announce()
  }

  constructor(namespace: string, locks: LockManager | undefined) {
    this.namespace = namespace
    this.locks = locks
    this.#channel = new BroadcastChannel(`zaris:idb:${namespace}`)
    this.#channel.onmessage = (ev: MessageEvent<Outcome>) => this.#heard(ev.data?.records ?? [])
    const doc = (globalThis as { document?: Document }).document
    doc?.addEventListener('freeze', this.#onFreeze)
    doc?.addEventListener('resume', this.#onResume)
  }

  /** How many times the page froze: a view of the key read before a freeze is stale after it. */
  get freezes(): number {
    return this.#freezes
  }

  /** Calls `fn` with the records of every commit seen (this page's and other tabs'), and with none on a wake (read again). */
  listen(fn: Listener): () => void {
    this.#listeners.add(fn)
    return () => this.#listeners.delete(fn)
  }

  /** One commit in a readwrite transaction of its own; announced to every tab once it completed. No counters: see `commitBatch`. */
  async commit(checks: Check[], ops: Array<Exclude<Op, { type: 'add' }>>, gate?: ThroughGate): Promise<CommitResult> {
    const { results, outcome } = await this.run((db) => commitBatch(db, [{ checks, ops, gate }], Date.now, HISTORY, this.#revision))
    this.tell(outcome)
    const r = results[0]!
    if (r instanceof Error) throw r
    return r
  }

  /** The stored entry at `key` (possibly expired: the caller decides). */
  read(key: string): Promise<Stored | undefined> {
    return this.run((db) => readEntry(db, key))
  }

  /**
   * Holds the liveness locks of `owner` (the IndexedDB adapter's names: a
   * shared one for the id and an exclusive one of this registration) while
   * the store is open, so that a full client's reaper ends `owner`'s term at
   * once when this tab goes. Resolves once both are held.
   */
  register(owner: string): Promise<void> {
    const locks = this.locks!
    let done = this.#registered.get(owner)
    if (done) return done
    const nonce = randomHex(12)
    const signal = this.#letGo.signal
    const hold = (name: string, mode: LockMode) =>
      new Promise<void>((resolve) => {
        locks
          .request(name, { mode, signal }, () => {
            resolve()
            return new Promise<void>((r) => signal.addEventListener('abort', () => r()))
          })
          .catch(() => resolve())
      })
    const instance = hold(`zaris:${this.namespace}:instance:${nonce}:${owner}`, 'exclusive')
    const id = `zaris:${this.namespace}:owner:${owner}`
    const shared = hold(id, 'shared')
    // A prober may hold the id's name for an instant: queued behind it (asked after the request), the id counts as alive already.
    const queued = new Promise<void>((resolve) => void locks.query().then((s) => s.held?.some((l) => l.name === id) && resolve(), () => {}))
    // Listened for from the first registration on (there is nothing to announce before): after the gates' own listener, which lets them go first.
    if (this.#nonces.length === 0) globalThis.addEventListener?.('pagehide', this.#onHide)
    done = Promise.all([instance, Promise.race([shared, queued])]).then(() => {})
    this.#registered.set(owner, done)
    this.#nonces.push({ owner, nonce })
    return done
  }

  /** Tells every tab (and this page's listeners) what a transaction of this page did. */
  tell(outcome: Outcome): void {
    try {
      this.#channel.postMessage(outcome)
    } catch {
      // Closed under us: other tabs read again when they wake.
    }
    this.#heard(outcome.records, true)
  }

  #announce(): void {
    try {
      const gone = new BroadcastChannel(`zaris:idb:${this.namespace}:gone`)
      for (const a of this.#nonces) gone.postMessage(a)
      gone.close()
    } catch {
      // The Web Locks tell the others a moment later.
    }
  }

  #heard(records: LogRecord[], local?: boolean): void {
    if (this.#closed) return
    const last = records[records.length - 1]
    if (last && last.revision > this.#revision) this.#revision = last.revision
    for (const fn of this.#listeners) fn(records, local)
  }

  /** Runs `fn` on the open database once the page runs; again if a freeze aborted it (it wrote nothing). */
  async run<T>(fn: (db: Connection) => Promise<T>): Promise<T> {
    for (;;) {
      if (this.#frozen) await this.#frozen.resumed
      if (this.#closed) throw new ClosedError('the election was closed')
      const db = await this.#open().catch((err: unknown) => Promise.reject(refused(err)))
      if (this.#frozen) continue
      const freezes = this.#freezes
      try {
        return await fn(db)
      } catch (err) {
        if (this.#freezes === freezes) throw refused(err)
      }
    }
  }

  #open(): Promise<Connection> {
    if (!this.#db) {
      const opening = openStore(this.namespace, () => {
        this.#connection?.close()
        this.#db = undefined
      }).then((db) => (this.#connection = new Connection(db)))
      this.#db = opening
      opening.catch(() => (this.#db = undefined)) // retried by the next call (no other open can have begun: this one was pending)
    }
    return this.#db
  }

  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#announce()
    this.#letGo.abort()
    this.#channel.close()
    const doc = (globalThis as { document?: Document }).document
    doc?.removeEventListener('freeze', this.#onFreeze)
    doc?.removeEventListener('resume', this.#onResume)
    globalThis.removeEventListener?.('pagehide', this.#onHide)
    this.#frozen?.resume()
    void this.#db?.then((c) => c.close(), () => {})
  }
}

/** A failure as the caller gets it: a DOMException has a (numeric) code too, so only zaris's errors pass as they are. */
function refused(err: unknown): Error {
  return isZarisError(err) ? err : new UnavailableError(`IndexedDB refused the transaction: ${(err as Error).message}`, { cause: err })
}

/** One store per namespace per page, shared by the elections, locks and watches of `zaris/elect` and `zaris/tabs`. */
const shared = new Map<string, { store: TermStore; refs: number }>()

/** The page's store of `namespace`, opened on first use; give it back with {@link unshareStore}. */
export function shareStore(namespace: string): TermStore {
  let s = shared.get(namespace)
  if (!s) shared.set(namespace, (s = { store: new TermStore(namespace, webLocks()), refs: 0 }))
  s.refs++
  return s.store
}

/** Gives back one {@link shareStore}; the last one closes the store. */
export function unshareStore(store: TermStore): void {
  const s = shared.get(store.namespace)
  if (s?.store !== store || --s.refs > 0) return
  shared.delete(store.namespace)
  store.close()
}

/** The Web Locks API, where the platform has it. */
function webLocks(): LockManager | undefined {
  return (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks
}
