/**
 * A store that lives in this process: the kernel of the memory adapter and of
 * the node's SQLite store. Entries sit in a Map (O(1) get and commit), expiry
 * deadlines in a min-heap with one timer for the earliest (no sweeps), recent
 * events in an {@link EventLog} for watch replays.
 *
 * A deleted key keeps its Map slot as a tombstone (`undefined`) instead of
 * being removed: in V8 (Node 20) a `delete` followed by a `set` of the same
 * key costs time proportional to the Map's size (each cycle lengthens the
 * key's hash chain until the table is rehashed), and a lock's release +
 * acquire is exactly that cycle. Tombstones are dropped by rebuilding the Map
 * once they outnumber the live entries, so that costs O(1) amortised.
 *
 * A durable store passes a {@link Persistence}: each commit and each expiry is
 * written through it, synchronously, before memory changes, so what a commit
 * acknowledges is on disk and a failed write changes nothing.
 *
 * @module
 */
import type { Adapter, Check, CommitResult, Entry, Op, Unsubscribe, Value, WatchSink } from '../../core/adapter'
import type { Clock, TimerHandle } from '../../core/clock'
import { ClosedError, InvalidArgumentError } from '../../core/errors'
import { copyValue as copy, EventLog } from './event-log'
import { MinHeap } from './heap'

/** An entry as a local store keeps it. */
export interface StoredEntry {
  key: string
  value: Value
  revision: number
  created: number
  owner?: string
  /** The TTL it was last written with: what it gets again after a restart. */
  ttl?: number
  /** When it expires, on the store's clock. */
  expiresAt?: number
}

/** Where a durable store writes. Must throw (and write nothing) on failure. */
export interface Persistence {
  write(revision: number, puts: StoredEntry[], deletes: string[]): void
}

export interface LocalStoreOptions {
  clock: Clock
  /** How many recent events are kept for watch replays. */
  historySize?: number
  persistence?: Persistence
  /** A durable store's state at start. */
  initial?: { revision: number; entries: Iterable<StoredEntry> }
}

/** Below this many tombstones the Map is never rebuilt: a rebuild of a small store would cost more than it saves. */
const MIN_TOMBSTONES = 1024
/** Below this many stale expiry items the heap is never compacted. */
const MIN_STALE_EXPIRY = 1024

export class LocalStore {
  readonly clock: Clock
  #revision = 0
  /** Live entries, and tombstones (`undefined`) of deleted keys: read a tombstone as absent everywhere. */
  #entries = new Map<string, StoredEntry | undefined>()
  /** How many values in `#entries` are live; the rest are tombstones. */
  #live = 0
  /** One item per TTL write; an item is stale once its entry was rewritten or deleted, and is skipped when it comes due. */
  #expiry = new MinHeap<{ at: number; key: string; revision: number }>()
  #timer: TimerHandle | undefined
  #timerAt = Infinity
  #log: EventLog
  #persistence: Persistence | undefined

  constructor(options: LocalStoreOptions) {
    this.clock = options.clock
    this.#persistence = options.persistence
    const initial = options.initial
    if (initial) {
      this.#revision = initial.revision
      for (const e of initial.entries) {
        if (this.#entries.get(e.key) === undefined) this.#live++
        this.#entries.set(e.key, e)
        if (e.expiresAt !== undefined) this.#expiry.push({ at: e.expiresAt, key: e.key, revision: e.revision })
      }
    }
    this.#log = new EventLog(options.historySize ?? 10_000, this.#revision)
    this.#schedule()
  }

  get revision(): number {
    return this.#revision
  }

  get size(): number {
    this.#expireDue()
    return this.#live
  }

  get watchers(): number {
    return this.#log.watchers
  }

  get(key: string): Entry | undefined {
    const now = this.#expireDue()
    const e = this.#entries.get(key)
    return e && this.#snapshot(e, now)
  }

  list(prefix: string): Entry[] {
    const now = this.#expireDue()
    const out: Entry[] = []
    for (const e of this.#entries.values()) if (e !== undefined && e.key.startsWith(prefix)) out.push(this.#snapshot(e, now))
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  }

  commit(checks: Check[], ops: Op[]): CommitResult {
    const now = this.#expireDue()
    let failed: Array<{ key: string; entry: Entry | undefined }> | undefined
    for (const check of checks) {
      const e = this.#entries.get(check.key)
      const holds =
        'revision' in check
          ? check.revision === null ? e === undefined : e?.revision === check.revision
          : check.created === null ? e === undefined : e?.created === check.created
      if (!holds) (failed ??= []).push({ key: check.key, entry: e && this.#snapshot(e, now) })
    }
    if (failed) return { ok: false, failed }

    const revision = this.#revision + 1
    const puts: StoredEntry[] = []
    const deletes: string[] = []
    // Most commits (a lock's acquire, release, renewal) have one op: no set needed to find a repeated key.
    const seen = ops.length > 1 ? new Set<string>() : undefined
    let added = 0
    for (const op of ops) {
      if (seen) {
        if (seen.has(op.key)) throw new InvalidArgumentError(`ops: key ${JSON.stringify(op.key)} appears twice in one commit`)
        seen.add(op.key)
      }
      const existing = this.#entries.get(op.key)
      if (op.type === 'delete') {
        if (existing) deletes.push(op.key)
        continue
      }
      if (existing === undefined) added++
      const stored: StoredEntry = {
        key: op.key,
        value: copy(op.value),
        revision,
        created: existing && !op.fresh ? existing.created : revision,
      }
      if (op.owner !== undefined) stored.owner = op.owner
      if (op.ttl !== undefined) {
        stored.ttl = op.ttl
        stored.expiresAt = now + op.ttl
      }
      puts.push(stored)
    }
    this.#persistence?.write(revision, puts, deletes)

    this.#revision = revision
    for (const key of deletes) {
      this.#remove(key)
      this.#log.append({ type: 'delete', key, revision })
    }
    this.#live += added
    const entries: Entry[] = []
    for (const e of puts) {
      this.#entries.set(e.key, e)
      if (e.expiresAt !== undefined) this.#expiry.push({ at: e.expiresAt, key: e.key, revision })
      this.#log.appendPut(e)
      entries.push(this.#snapshot(e, now))
    }
    this.#compact()
    this.#schedule()
    return { ok: true, revision, entries, deleted: deletes }
  }

  watch(prefix: string, sink: WatchSink, fromRevision?: number): Unsubscribe {
    this.#expireDue()
    return this.#log.subscribe(prefix, sink, fromRevision)
  }

  /** Stops the expiry timer and ends every watch; the store is not used again. */
  close(): void {
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#log.closeAll(new ClosedError('the store was closed'))
  }

  /** Deletes every entry whose deadline has passed, each with its own revision and `expire` event; returns the time it used. */
  #expireDue(): number {
    const now = this.clock.now()
    let expired = false
    for (let top = this.#expiry.peek(); top !== undefined && top.at <= now; top = this.#expiry.peek()) {
      this.#expiry.pop()
      const e = this.#entries.get(top.key)
      // A heap item is stale once its entry was rewritten or deleted.
      if (e === undefined || e.revision !== top.revision) continue
      const revision = this.#revision + 1
      this.#persistence?.write(revision, [], [e.key])
      this.#revision = revision
      this.#remove(e.key)
      this.#log.append({ type: 'expire', key: e.key, revision })
      expired = true
    }
    if (expired) this.#compact()
    return now
  }

  /** Deletes a live entry, leaving a tombstone (see the module comment for why not `Map.delete`). */
  #remove(key: string): void {
    this.#entries.set(key, undefined)
    this.#live--
  }

  /**
   * Drops tombstones once they outnumber the live entries, and stale expiry
   * items once they outnumber the live entries: each rebuild costs O(live)
   * and follows at least as many deletes or TTL writes, so O(1) amortised.
   */
  #compact(): void {
    const live = this.#live
    if (this.#entries.size - live > Math.max(live, MIN_TOMBSTONES)) {
      const entries = new Map<string, StoredEntry | undefined>()
      for (const [key, e] of this.#entries) if (e !== undefined) entries.set(key, e)
      this.#entries = entries
    }
    // Every live entry has at most one fresh item, so the rest are stale.
    if (this.#expiry.size - live > Math.max(live, MIN_STALE_EXPIRY)) {
      this.#expiry.retain((item) => this.#entries.get(item.key)?.revision === item.revision)
    }
  }

  #schedule(): void {
    const next = this.#expiry.peek()
    if (next === undefined || next.at >= this.#timerAt) return
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer)
    this.#timerAt = next.at
    this.#timer = this.clock.setTimeout(() => {
      this.#timer = undefined
      this.#timerAt = Infinity
      this.#expireDue()
      this.#schedule()
    }, next.at - this.clock.now())
  }

  #snapshot(e: StoredEntry, now: number): Entry {
    const entry: Entry = { key: e.key, value: copy(e.value), revision: e.revision, created: e.created }
    if (e.owner !== undefined) entry.owner = e.owner
    if (e.expiresAt !== undefined) entry.ttl = Math.max(0, e.expiresAt - now)
    return entry
  }
}

/**
 * An Adapter over a LocalStore. Each adapter closes on its own (its watches
 * end, its calls fail with `ClosedError`) while the store lives on for others.
 */
export function localAdapter(
  name: string,
  store: LocalStore,
  onClose?: () => void,
): Adapter {
  let closed = false
  const subscriptions = new Set<{ unsubscribe: Unsubscribe; sink: WatchSink }>()
  const open = () => {
    if (closed) throw new ClosedError(`the ${name} adapter is closed`)
  }
  return {
    name,
    async get(key) {
      open()
      return store.get(key)
    },
    async list(prefix) {
      open()
      return store.list(prefix)
    },
    async commit(checks, ops) {
      open()
      return store.commit(checks, ops)
    },
    async watch(prefix, sink, fromRevision) {
      open()
      const sub = { sink, unsubscribe: () => {} }
      subscriptions.add(sub)
      sub.unsubscribe = store.watch(prefix, sink, fromRevision)
      return () => {
        sub.unsubscribe()
        subscriptions.delete(sub)
      }
    },
    async close() {
      if (closed) return
      closed = true
      for (const sub of subscriptions) sub.unsubscribe()
      subscriptions.clear()
      onClose?.()
    },
  }
}

