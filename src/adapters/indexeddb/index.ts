/**
 * The IndexedDB adapter, `zaris://idb/<namespace>`: a store shared by every
 * tab (and worker) of an origin, kept in IndexedDB so it survives reloads and
 * browser restarts, with commits announced over BroadcastChannel and client
 * liveness taken from the Web Locks API.
 *
 * The store's clock is wall time (`Date.now()`), the one clock all tabs
 * share: entries expire at `Date.now()` deadlines. The holder's own deadline
 * stays on its monotonic clock in the core, so a wall-clock jump can end a
 * hold early in the store but never lets a holder outlive its entry by more
 * than the jump.
 *
 * @module
 */
import type { Adapter, Check, Op, Unsubscribe, WatchSink } from '../../core/adapter'
import type { Clock, TimerHandle } from '../../core/clock'
import { ClosedError, InvalidArgumentError, UnavailableError, UnsupportedError } from '../../core/errors'
import { checkKey } from '../../core/validate'
import { Feed } from './feed'
import { Liveness, webLocks } from './liveness'
import { openStore, type Database, type LogRecord } from './schema'
import {
  commitTx,
  earliestExpiry,
  expired,
  readEntry,
  readLog,
  readPrefix,
  readRevision,
  sweepTx,
  toEntry,
  type Outcome,
} from './transactions'

export { backgroundClock } from './background-clock'
export type { BackgroundClock } from './background-clock'

/** Options of {@link indexedDbAdapter}. */
export interface IndexedDbAdapterOptions {
  /** The store: one IndexedDB database (`zaris:<namespace>`) per namespace. Default `default`. */
  namespace?: string
  /** How many recent revisions the change log keeps for watches that resume or catch up. Default 10 000. */
  historySize?: number
  /**
   * The store's clock: TTL deadlines are `clock.now() + ttl`, and expiry
   * timers run on it. Every tab must use the same scale; the default is wall
   * time (`Date.now()` with the page's timers).
   */
  clock?: Clock
  /** Use the Web Locks API to learn at once when a holder's tab is gone. Default true where `navigator.locks` exists. */
  liveness?: boolean
}

/** Wall time with the page's timers: the one clock every tab of an origin shares. */
const wallClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, Math.max(0, ms)) as unknown as TimerHandle,
  clearTimeout: (handle) => globalThis.clearTimeout(handle as unknown as ReturnType<typeof setTimeout>),
}

/** What the browser must offer for this adapter. */
function assertSupported(): void {
  const g = globalThis as { indexedDB?: unknown; BroadcastChannel?: unknown; process?: { versions?: { node?: string } } }
  if (g.indexedDB && g.BroadcastChannel) return
  const where = g.process?.versions?.node ? 'Node' : 'this environment'
  throw new UnsupportedError(
    `zaris://idb/ needs IndexedDB and BroadcastChannel, which ${where} does not have: ` +
      'use zaris://inproc/<namespace> within one process, or a zaris node (zaris://host:7861/<namespace>, started with `npx zaris serve`) across processes',
  )
}

/**
 * Creates an adapter on the IndexedDB store of a namespace, shared by every
 * tab of the origin. The database opens on first use; {@link openIndexedDb}
 * opens it first.
 *
 * @example
 * import { Client } from 'zaris'
 * import { indexedDbAdapter } from 'zaris/indexeddb'
 * const client = new Client(indexedDbAdapter({ namespace: 'app' }))
 * const lock = await client.locks.acquire('lock:websocket', { wait: Infinity })
 */
export function indexedDbAdapter(options: IndexedDbAdapterOptions = {}): Adapter {
  return new IndexedDbStore(options).adapter
}

/**
 * Like {@link indexedDbAdapter}, but resolves once the database is open, so
 * a store that cannot open fails here.
 *
 * @example
 * const adapter = await openIndexedDb({ namespace: 'app' })
 */
export async function openIndexedDb(options: IndexedDbAdapterOptions = {}): Promise<Adapter> {
  const store = new IndexedDbStore(options)
  await store.db()
  return store.adapter
}

/** Opens the adapter for a parsed `zaris://idb/<namespace>` URL (used by `connect`). */
export function fromUrl(namespace: string): Promise<Adapter> {
  return openIndexedDb({ namespace })
}

class IndexedDbStore {
  readonly adapter: Adapter
  readonly #namespace: string
  readonly #historySize: number
  readonly #clock: Clock
  readonly #liveness: Liveness | undefined
  readonly #channel: BroadcastChannel
  readonly #feed: Feed
  readonly #unwatch = new Set<Unsubscribe>()
  #db: Promise<Database> | undefined
  #gone = false
  #closed = false
  #timer: TimerHandle | undefined
  #timerAt = Infinity
  #sweeping = false
  #sweepAgain = false

  constructor(options: IndexedDbAdapterOptions) {
    assertSupported()
    if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options must be an object')
    this.#namespace = checkKey(options.namespace ?? 'default', 'namespace')
    const historySize = options.historySize ?? 10_000
    if (!Number.isInteger(historySize) || historySize < 1) {
      throw new InvalidArgumentError(`historySize must be a positive integer, got ${String(historySize)}`)
    }
    this.#historySize = historySize
    this.#clock = options.clock ?? wallClock
    const locks = options.liveness === false ? undefined : webLocks()
    this.#liveness = locks && new Liveness(locks, this.#namespace)
    this.#feed = new Feed({
      historySize,
      revision: async () => readRevision(await this.db()),
      log: async (after) => readLog(await this.db(), after),
    })
    this.#channel = new BroadcastChannel(`zaris:idb:${this.#namespace}`)
    this.#channel.onmessage = (ev: MessageEvent<Outcome>) => this.#received(ev.data)
    this.adapter = this.#makeAdapter()
  }

  /** The open database, opened on first use. */
  db(): Promise<Database> {
    if (this.#closed) return Promise.reject(new ClosedError('the indexeddb adapter is closed'))
    if (this.#gone) {
      return Promise.reject(new UnavailableError(`the IndexedDB database of ${JSON.stringify(this.#namespace)} was deleted or upgraded by another tab`))
    }
    if (!this.#db) {
      this.#db = openStore(this.#namespace, () => this.#onGone())
      this.#db.then(
        async (db) => this.#armExpiry(await earliestExpiry(db)),
        () => {},
      )
      this.#db.catch(() => (this.#db = undefined)) // a failed open is retried by the next call
    }
    return this.#db
  }

  #makeAdapter(): Adapter {
    const liveness = this.#liveness
    const adapter: Adapter = {
      name: 'indexeddb',
      capabilities: { ownerGone: liveness !== undefined },
      get: async (key) => {
        const db = await this.db()
        const e = await readEntry(db, key)
        const now = this.#clock.now()
        if (!e) return undefined
        if (expired(e, now)) {
          this.#armExpiry(now)
          return undefined
        }
        return toEntry(e, now)
      },
      list: async (prefix) => {
        const db = await this.db()
        const all = await readPrefix(db, prefix)
        const now = this.#clock.now()
        const live = all.filter((e) => !expired(e, now))
        if (live.length < all.length) this.#armExpiry(now)
        return live.map((e) => toEntry(e, now))
      },
      commit: (checks, ops) => this.#commit(checks, ops),
      watch: (prefix, sink, fromRevision) => this.#watch(prefix, sink, fromRevision),
      close: () => this.#close(),
    }
    if (liveness) {
      adapter.ownerGone = (owner, signal) => liveness.gone(owner, signal)
      adapter.registerOwner = (owner) => liveness.register(owner)
    }
    return adapter
  }

  async #commit(checks: Check[], ops: Op[]) {
    const seen = new Set<string>()
    for (const op of ops) {
      if (seen.has(op.key)) throw new InvalidArgumentError(`ops: key ${JSON.stringify(op.key)} appears twice in one commit`)
      seen.add(op.key)
    }
    const db = await this.db()
    // Snapshot values now: the transaction, the result and the events must not see later mutations.
    const frozen = ops.map((op) => (op.type === 'set' && typeof op.value === 'object' && op.value !== null ? { ...op, value: structuredClone(op.value) } : op))
    const { result, outcome } = await commitTx(db, checks, frozen, this.#clock.now(), this.#historySize)
    this.#announce(outcome)
    if (result.ok) {
      for (const e of result.entries) if (typeof e.value === 'object' && e.value !== null) e.value = structuredClone(e.value)
    }
    return result
  }

  async #watch(prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe> {
    if (this.#closed) throw new ClosedError('the indexeddb adapter is closed')
    const unsubscribe = await this.#feed.subscribe(prefix, sink, fromRevision)
    if (this.#closed) {
      unsubscribe()
      throw new ClosedError('the indexeddb adapter is closed')
    }
    const done = () => {
      unsubscribe()
      this.#unwatch.delete(done)
    }
    this.#unwatch.add(done)
    return done
  }

  /** Tells this tab's watchers and every other tab what a transaction did. */
  #announce(outcome: Outcome): void {
    if (outcome.records.length === 0 && outcome.nextExpiry === undefined) return
    if (!this.#closed) {
      try {
        this.#channel.postMessage(outcome)
      } catch {
        // The channel closed under us; other tabs catch up from the log.
      }
    }
    this.#received(outcome)
  }

  #received(outcome: Outcome): void {
    if (this.#closed) return
    this.#feed.receive(outcome.records as LogRecord[])
    if (outcome.nextExpiry !== undefined) this.#armExpiry(outcome.nextExpiry)
  }

  /** Makes sure this tab's expiry timer fires by `at` (wall time). */
  #armExpiry(at: number | undefined): void {
    if (at === undefined || this.#closed || at >= this.#timerAt) return
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timerAt = at
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined
      this.#timerAt = Infinity
      void this.#sweep()
    }, at - this.#clock.now())
  }

  async #sweep(): Promise<void> {
    if (this.#closed) return
    if (this.#sweeping) {
      this.#sweepAgain = true
      return
    }
    this.#sweeping = true
    try {
      do {
        this.#sweepAgain = false
        const outcome = await sweepTx(await this.db(), this.#clock.now(), this.#historySize)
        this.#announce(outcome)
      } while (this.#sweepAgain && !this.#closed)
    } catch {
      // Closed or deleted under us; another tab sweeps.
    } finally {
      this.#sweeping = false
    }
  }

  #onGone(): void {
    this.#gone = true
    void this.#db?.then((db) => db.close(), () => {})
  }

  async #close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    for (const done of [...this.#unwatch]) done()
    this.#feed.clear()
    this.#channel.close()
    this.#liveness?.close()
    const db = this.#db
    this.#db = undefined
    if (db) await db.then((d) => d.close(), () => {})
  }
}
