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
import type { Adapter, Check, CommitOptions, CommitResult, Entry, ListOptions, ListPage, Op, Unsubscribe, WatchSink } from '../../core/contract/adapter'
import type { Clock, TimerHandle } from '../../core/time/clock'
import { ClosedError, InvalidArgumentError, UnsupportedError } from '../../core/contract/errors'
import { checkCommitArgs, checkKey, checkListOptions, checkPrefix, checkWatchArgs } from '../../core/contract/validate'
import { answerOf, keepAnswer, type Answers } from '../kit/answers'
import { AdapterLife } from '../kit/life'
import { Liveness } from './liveness'
import { Reaper } from './reaper'
import type { Database } from './schema'
import { SharedStore } from './page-store'
import { copyValue as copy, expired, toEntry } from '../kit/write'
import { readEntry, readPrefix, type ThroughGate } from './transactions'
import { WebLockGate } from './gate'

/**
 * Options of {@link indexedDbAdapter}.
 *
 * @example
 * const options: IndexedDbAdapterOptions = { namespace: 'app', historySize: 1_000 }
 */
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
  /**
   * Use the Web Locks API: for gates (the browser's lock manager orders and
   * excludes the tabs' locks, leases and campaigns before they commit) and to
   * learn at once when a holder's tab is gone. Default true where
   * `navigator.locks` exists; without it, the store's commits and TTLs alone.
   */
  liveness?: boolean
}

/** Wall time with the page's timers: the one clock every tab of an origin shares. */
const wallClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, Math.max(0, ms)) as unknown as TimerHandle,
  clearTimeout: (handle) => globalThis.clearTimeout(handle as unknown as ReturnType<typeof setTimeout>),
}

/** The Web Locks API, where the platform has it. */
function webLocks(): LockManager | undefined {
  const nav = (globalThis as { navigator?: { locks?: LockManager } }).navigator
  return nav?.locks && typeof nav.locks.request === 'function' ? nav.locks : undefined
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
 * a store that cannot open fails here (`connect('zaris://idb/…')` opens
 * stores this way).
 *
 * @example
 * const adapter = await openIndexedDb({ namespace: 'app' })
 */
export async function openIndexedDb(options: IndexedDbAdapterOptions = {}): Promise<Adapter> {
  const store = new IndexedDbStore(options)
  try {
    await store.db()
  } catch (err) {
    await store.adapter.close()
    throw err
  }
  return store.adapter
}

/**
 * One adapter's store. Liveness and the reaper start with it: the reaper
 * follows owners from the store's first read (a page that only reads still
 * ends a closed tab's entries for everyone), and a client registers before
 * its first write (the core awaits `registerOwner`).
 */
/** The answers of each page store's commits by request id. */
const answered = new WeakMap<SharedStore, Answers>()

class IndexedDbStore {
  readonly adapter: Adapter
  readonly #shared: SharedStore
  readonly #locks: LockManager | undefined
  readonly #liveness: Liveness | undefined
  /** Ends the entries of clients that are gone (closed or crashed tabs), for every tab. */
  readonly #reaper: Reaper | undefined
  readonly #life = new AdapterLife('indexeddb')
  /** The gates this adapter made that are not let go: its clients' holds and requests, which end with it. */
  readonly #gates = new Set<WebLockGate>()

  constructor(options: IndexedDbAdapterOptions) {
    assertSupported()
    if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options must be an object')
    const namespace = checkKey(options.namespace ?? 'default', 'namespace')
    const historySize = options.historySize ?? 10_000
    if (!Number.isInteger(historySize) || historySize < 1) {
      throw new InvalidArgumentError(`historySize must be a positive integer, got ${String(historySize)}`)
    }
    this.#locks = options.liveness === false ? undefined : webLocks()
    this.#shared = SharedStore.acquire(namespace, historySize, options.clock ?? wallClock)
    if (this.#locks) {
      this.#liveness = new Liveness(this.#locks, namespace)
      this.#reaper = Reaper.acquire(this.#shared, this.#locks)
    }
    this.adapter = this.#makeAdapter()
  }

  /** The open database (a closed adapter's watch is refused by its life's `track`). */
  db(): Promise<Database> {
    return this.#shared.db()
  }

  /** Runs a read on the open database, once the page runs (see `SharedStore.run`). */
  #run<T>(fn: (db: Database) => Promise<T>): Promise<T> {
    if (this.#life.closed) return Promise.reject(new ClosedError('the indexeddb adapter is closed'))
    return this.#shared.run(fn)
  }

  #makeAdapter(): Adapter {
    const clock = this.#shared.clock
    const adapter: Adapter = {
      name: 'indexeddb',
      capabilities: { ownerGone: this.#locks !== undefined, gates: this.#locks !== undefined },
      get: async (key) => {
        checkKey(key)
        const e = await this.#run((db) => readEntry(db, key))
        const now = clock.now()
        if (!e) return undefined
        if (expired(e, now)) {
          this.#shared.armExpiry(now)
          return undefined
        }
        return toEntry(e, now)
      },
      list: (prefix, options) => this.#list(prefix, options),
      commit: (checks, ops, options) => this.#commit(checks, ops, options),
      watch: (prefix, sink, fromRevision) => this.#watch(prefix, sink, fromRevision),
      close: () => this.#close(),
    }
    const locks = this.#locks
    const liveness = this.#liveness
    if (locks && liveness) {
      adapter.ownerGone = async (owner, signal) => liveness.gone(owner, signal)
      adapter.registerOwner = async (owner) => {
        this.#life.assertOpen()
        await liveness.register(owner)
      }
      adapter.gate = (key, options = {}) => {
        this.#life.assertOpen()
        checkKey(key)
        const gate = new WebLockGate(locks, this.#shared.namespace, key, options, (g) => this.#gates.delete(g))
        this.#gates.add(gate)
        return gate
      }
    }
    return adapter
  }

  /** A page of live entries: read a record more than the limit, to know whether more follow; expired ones are skipped. */
  async #list(prefix: string, options: ListOptions | undefined): Promise<ListPage> {
    checkPrefix(prefix)
    const { after, limit } = checkListOptions(options)
    const entries: Entry[] = []
    let from = after
    for (;;) {
      const want = limit === undefined ? undefined : limit - entries.length + 1
      const records = await this.#run((db) => readPrefix(db, prefix, from, want))
      const now = this.#shared.clock.now()
      for (const e of records) {
        if (expired(e, now)) {
          this.#shared.armExpiry(now)
          continue
        }
        if (entries.length === limit) return { entries, more: true }
        entries.push(toEntry(e, now))
      }
      // Fewer than asked for: the range is done. Else expired records took places: read on after the last.
      if (want === undefined || records.length < want) return { entries, more: false }
      from = records.at(-1)!.key
    }
  }

  async #commit(checks: Check[], ops: Op[], options: CommitOptions | undefined): Promise<CommitResult> {
    this.#life.assertOpen()
    checkCommitArgs(checks, ops)
    // A commit sent again with its request id is answered as the first time, by this page's store of the namespace.
    const id = options?.requestId
    const answers = answered.get(this.#shared) ?? new Map()
    answered.set(this.#shared, answers)
    const kept = answerOf(answers, id)
    if (kept) return kept
    // Values are copied now: the transaction, the result and the events must not see later mutations.
    const copied = ops.map((op) => (op.type === 'set' ? { ...op, value: copy(op.value) } : op))
    const result = await this.#shared.commit(checks, copied, WebLockGate.through(options?.gate, this.#shared.namespace))
    keepAnswer(answers, id, result)
    // Results share nothing with the store's records or with other commits of the batch.
    if (result.ok) for (const e of result.entries) e.value = copy(e.value)
    else for (const f of result.failed) if (f.entry) f.entry = { ...f.entry, value: copy(f.entry.value) }
    return result
  }

  async #watch(prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe> {
    checkWatchArgs(prefix, sink, fromRevision)
    await this.db()
    return this.#life.track(await this.#shared.feed.subscribe(prefix, sink, fromRevision))
  }

  async #close(): Promise<void> {
    if (!this.#life.close()) return
    // Its clients are gone: the next in line of each of their gates takes the key over (a closed tab does the same).
    for (const gate of [...this.#gates]) gate.release()
    this.#liveness?.close()
    this.#reaper?.release()
    await this.#shared.release()
  }
}
