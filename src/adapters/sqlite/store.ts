/**
 * The stores of one SQLite file: each namespace is a {@link LocalStore}
 * whose every commit and expiry is written through to the file (in the open
 * group, `./group.ts`) before memory changes, served by the same local
 * adapter as memory. Reads see only what is on disk; a commit is answered
 * once its group is; a commit retried with its request id is answered from
 * its events, not applied again.
 *
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3'
import type { Adapter, Check, CommitResult, Entry, HistoryLimits, HistoryPage, Op, Unsubscribe, WatchEvent, WatchSink } from '../../core/contract/adapter'
import { systemClock, type Clock } from '../../core/time/clock'
import { ClosedError, CompactedError, UnavailableError, isZarisError } from '../../core/contract/errors'
import { LocalStore } from '../kit/local-store'
import { localAdapter } from '../kit/local-adapter'
import type { ParkOptions } from '../kit/parked'
import type { Stored } from '../kit/write'
import { GatedSink, GroupCommit, type Group } from './group'
import { FreezableClock, readNamespace, type Loaded } from './load'
import { fromRow, prepare, rowPlace, toEvent, type Statements } from './schema'
import type { SqliteOptions, SqliteStores } from './types'

/** Revisions between two checkpoints of a namespace's entries (each also prunes its history). */
const CHECKPOINT_EVERY = 1_000
/** Most commits one group takes before it is written at once. */
const MAX_GROUP = 1_000

export class SqliteStoresImpl implements SqliteStores {
  readonly file: string
  readonly #db: BetterSqlite3.Database
  readonly #options: SqliteOptions
  readonly #baseClock: Clock
  readonly #stores = new Map<string, Loaded>()
  readonly #requestTtlMs: number
  readonly #maxRequests: number
  readonly #historySize: number
  /** The namespace whose commit is running: its deletes are `delete` events, any other is an expiry. */
  #committing: string | undefined
  /** The request id of the commit running. */
  #pending: string | undefined
  #closed = false
  readonly #sql: Statements
  readonly #groups: GroupCommit

  constructor(db: BetterSqlite3.Database, file: string, options: SqliteOptions, legacyRequests: boolean) {
    this.#db = db
    this.file = file
    this.#options = options
    this.#baseClock = options.clock ?? systemClock
    this.#requestTtlMs = options.requestTtlMs ?? 10 * 60_000
    this.#maxRequests = options.maxRequests ?? 100_000
    this.#historySize = options.historySize ?? 10_000
    this.#sql = prepare(db, legacyRequests)
    this.#groups = new GroupCommit(db, this.#sql, {
      beforeSync: (group) => {
        this.#maintain(group)
        this.#options.beforeSync?.()
      },
      failed: (group, error) => this.#reload(group, error),
    })
  }

  /** @internal Loads every namespace the file holds. */
  loadAll(): void {
    for (const { ns } of this.#db.prepare('SELECT ns FROM zaris_stores').all() as Array<{ ns: string }>) this.#load(ns)
  }

  position(namespace: string): { revision: number; epoch: string } {
    this.#groups.flush()
    const { store, epoch } = this.#load(namespace)
    return { revision: store.revision, epoch }
  }

  adapter(namespace: string): Adapter {
    this.#load(namespace)
    const stores = this.#stores
    return localAdapter('sqlite', {
      get: (key) => this.#read(namespace, (store) => store.get(key)),
      list: (prefix, after, limit) => this.#read(namespace, (store) => store.list(prefix, after, limit)),
      history: (prefix, after, limits) => this.#history(namespace, prefix, after, limits),
      commit: (checks, ops, seen, requestId, park) => this.#commit(namespace, checks, ops, requestId, seen, park),
      watch: (prefix, sink, fromRevision) => this.#watch(namespace, prefix, sink, fromRevision),
      get granted() {
        return stores.get(namespace)?.store.granted
      },
    })
  }

  close(): void {
    if (this.#closed) return
    this.#groups.flush()
    this.#closed = true
    for (const { store } of this.#stores.values()) store.close()
    this.#stores.clear()
    this.#db.close()
  }

  /**
   * A read sees only what is on disk: pending commits are written first (if
   * that fails, their namespaces are reloaded from the file), and so is any
   * expiry the read made due.
   */
  #read<T>(namespace: string, read: (store: LocalStore) => T): T {
    this.#groups.flush()
    const out = read(this.#load(namespace).store)
    this.#groups.flushOrThrow()
    return out
  }

  /**
   * A page of history: from memory while it reaches back far enough, else
   * from the file's events, read row by row up to the page's limits.
   */
  #history(namespace: string, prefix: string, after: number, limits: HistoryLimits): HistoryPage {
    this.#groups.flush()
    const { store } = this.#load(namespace)
    try {
      return store.history(prefix, after, limits)
    } catch (err) {
      if (!isZarisError(err, 'COMPACTED')) throw err
    }
    const gone = this.#sql.compacted.get(namespace)?.compacted ?? 0
    if (after < gone) throw new CompactedError(`read from revision ${after}: history up to revision ${gone} is gone; read the current state and watch from its revision`)
    const now = store.revision
    const events: WatchEvent[] = []
    let bytes = 0
    let through = after
    for (const row of this.#sql.events.iterate(namespace, after)) {
      if (row.revision > now) break
      // Cut only between revisions, so `through` is complete.
      if (row.revision !== through && (events.length >= limits.maxEvents || bytes >= limits.maxBytes)) return { events, through, more: true }
      through = row.revision
      if (!row.key.startsWith(prefix)) continue
      events.push(toEvent(row))
      bytes += 64 + 2 * (row.key.length + (row.value?.length ?? 0))
    }
    return { events, through: Math.max(through, now), more: false }
  }

  async #commit(namespace: string, checks: Check[], ops: Op[], id: string | undefined, seen: number | undefined, park?: ParkOptions): Promise<CommitResult> {
    const { store, clock, requests } = this.#load(namespace)
    if (id !== undefined) {
      const seen = requests.get(id)
      if (seen) {
        const answer = seen.legacy !== undefined ? (JSON.parse(seen.legacy) as CommitResult) : this.#answer(namespace, seen.revision)
        if (seen.group) await seen.group.done
        return answer
      }
    }
    // Expiries due now are written first, under their own revisions; the
    // clock then stands still through the commit, so the one write made
    // while `committing` is set is the commit's own. The store commits
    // synchronously, so nothing else runs between.
    let result: CommitResult | Promise<CommitResult>
    // A parked commit's later try is written with its own request id, into the group open then.
    const tag: ParkTag | undefined = park && { requestId: id, group: undefined }
    clock.freeze()
    try {
      void store.size
      this.#committing = namespace
      this.#pending = id
      result = store.commit(checks, ops, seen, id, park && { ...park, tag })
    } finally {
      this.#committing = undefined
      this.#pending = undefined
      clock.thaw()
    }
    if (result instanceof Promise) {
      // Parked: answered by a later try, which went through in the group open then, or failed on what the store held then.
      const answer = await result
      const at = tag!.group ?? this.#groups.current
      if (at) await at.done
      return answer
    }
    const group = this.#groups.current
    if (group === undefined) return result
    if (group.commits >= MAX_GROUP) this.#groups.flush()
    // A success, and a failed check too, rest on the group's commits: neither is told before they are on disk.
    await group.done
    return result
  }

  /** The answer of the commit that made `revision`, from its events. */
  #answer(namespace: string, revision: number): CommitResult {
    const answer = { ok: true as const, revision, entries: [] as Entry[], deleted: [] as string[] }
    for (const e of this.#sql.commitEvents.all(namespace, revision)) {
      if (e.type === 'put') answer.entries.push(toEntry(fromRow({ ...e, value: e.value!, created: e.created! }, rowPlace(this.file, namespace, `event of revision ${revision} for`))))
      else if (e.type !== 'none') answer.deleted.push(e.key)
    }
    return answer
  }

  #watch(namespace: string, prefix: string, sink: WatchSink, fromRevision: number | undefined): Unsubscribe {
    this.#groups.flush()
    const loaded = this.#load(namespace)
    const { store } = loaded
    const gated = new GatedSink(sink, (deliver) => this.#groups.hold(deliver))
    loaded.sinks.add(gated)
    let unsubscribe: Unsubscribe
    if (fromRevision === undefined) {
      unsubscribe = store.watch(prefix, gated)
    } else {
      // The in-memory history first; if it does not reach back far enough
      // (a restart emptied it), the file's history. All of it synchronous,
      // so no event falls between the replay and the subscription.
      let compacted = false
      let subscribing = true
      const probe: WatchSink = {
        event: (ev) => gated.event(ev),
        error: (err) => {
          if (subscribing && isZarisError(err, 'COMPACTED')) compacted = true
          else gated.error(err)
        },
      }
      unsubscribe = store.watch(prefix, probe, fromRevision)
      subscribing = false
      if (compacted) {
        const gone = this.#sql.compacted.get(namespace)?.compacted ?? 0
        if (fromRevision < gone) {
          gated.error(new CompactedError(`watch from revision ${fromRevision}: history up to revision ${gone} is gone; read the current state and watch from its revision`))
          unsubscribe = () => {}
        } else {
          const now = store.revision
          for (const row of this.#sql.events.all(namespace, fromRevision)) {
            if (row.revision <= now && row.key.startsWith(prefix)) deliver(gated, toEvent(row))
          }
          unsubscribe = store.watch(prefix, gated, now)
        }
      }
    }
    // An expiry the subscription made due is written before the watch starts.
    this.#groups.flush()
    return () => {
      unsubscribe()
      loaded.sinks.delete(gated)
    }
  }

  /**
   * A group that did not reach the disk: every namespace it wrote is
   * reloaded from the file, so memory again holds only what is on disk.
   * Their watches end (unavailable), and resume from the last revision they saw.
   */
  #reload(group: Group, error: Error): void {
    for (const namespace of group.namespaces) {
      const loaded = this.#stores.get(namespace)
      if (!loaded) continue
      this.#stores.delete(namespace)
      for (const sink of loaded.sinks) sink.kill(error)
      loaded.sinks.clear()
      loaded.store.close()
    }
  }

  /** Checkpoints (and prunes the history of) every namespace of the group that is due. */
  #maintain(group: Group): void {
    for (const namespace of group.namespaces) {
      const loaded = this.#stores.get(namespace)
      if (!loaded || loaded.store.revision - loaded.checkpoint < CHECKPOINT_EVERY) continue
      try {
        this.#db.transaction(() => this.#checkpoint(namespace, loaded))()
      } catch {
        // The commits need not wait for housekeeping: it is tried again at the next group.
        continue
      }
      loaded.dirty.clear()
      loaded.checkpoint = loaded.store.revision
    }
  }

  /**
   * Writes the entries changed since the last checkpoint, then drops the
   * events no longer needed: older than the history kept, and older than the
   * oldest request id remembered (its answer is rebuilt from its events).
   */
  #checkpoint(namespace: string, loaded: Loaded): void {
    const sql = this.#sql
    const revision = loaded.store.revision
    for (const [key, e] of loaded.dirty) {
      if (e === null) sql.del.run(namespace, key)
      else sql.put.run(namespace, key, JSON.stringify(e.value), e.revision, e.created, e.owner ?? null, e.ttl ?? null)
    }
    sql.setCheckpoint.run(revision, namespace)
    const since = Date.now() - this.#requestTtlMs
    for (const [id, r] of loaded.requests) {
      if (r.at >= since && loaded.requests.size <= this.#maxRequests) break
      loaded.requests.delete(id)
    }
    let oldest = Infinity
    for (const r of loaded.requests.values()) {
      oldest = r.revision
      break
    }
    const cut = Math.min(revision - this.#historySize, oldest - 1)
    if (cut > 0) {
      sql.pruneEvents.run(namespace, cut)
      sql.setCompacted.run(cut, namespace)
    }
    sql.pruneLegacy?.run(namespace, since)
  }

  #load(namespace: string): Loaded {
    if (this.#closed) throw new ClosedError('the SQLite store is closed')
    const known = this.#stores.get(namespace)
    if (known) return known
    const clock = new FreezableClock(this.#baseClock)
    const read = readNamespace(this.#sql, this.file, namespace, clock.now(), this.#requestTtlMs)
    // Inside an open group a new namespace's row is written (or lost) with it.
    if (read.created) this.#groups.current?.namespaces.add(namespace)
    const { epoch, checkpoint, dirty, requests, revision, entries } = read
    const loaded: Loaded = { store: undefined as unknown as LocalStore, clock, epoch, checkpoint, dirty, requests, sinks: new Set() }
    loaded.store = new LocalStore({
      clock,
      historySize: this.#options.historySize,
      historyBytes: this.#options.historyBytes,
      historyBudget: this.#options.historyBudget,
      quota: this.#options.quota,
      initial: { revision, entries: entries.values() },
      persistence: { write: (rev, puts, deletes, parked) => this.#write(namespace, loaded, rev, puts, deletes, parked as ParkTag | undefined) },
    })
    this.#stores.set(namespace, loaded)
    return loaded
  }

  /**
   * One commit (or expiry) into the open group: its events only, one row
   * each (a commit that changed nothing writes a `none` row, so the revision
   * is always the events' maximum), the request id on the first. In a
   * savepoint, so a failed write leaves the group's other commits as they were.
   */
  #write(namespace: string, loaded: Loaded, revision: number, puts: Stored[], deletes: string[], parked: ParkTag | undefined): void {
    const sql = this.#sql
    const id = parked ? parked.requestId : this.#committing === namespace ? this.#pending : undefined
    const deleteType = parked || this.#committing === namespace ? 'delete' : 'expire'
    let group: Group | undefined
    const at = id === undefined ? null : Date.now()
    try {
      group = this.#groups.begin()
      this.#db.transaction(() => {
        let seq = 0
        const first = () => (seq === 0 ? [id ?? null, at] as const : [null, null] as const)
        // Events in the order the store reports them: deletes, then puts.
        for (const key of deletes) sql.event.run(namespace, revision, seq, deleteType, key, null, null, null, null, ...first()), seq++
        for (const e of puts) {
          sql.event.run(namespace, revision, seq, 'put', e.key, JSON.stringify(e.value), e.created, e.owner ?? null, e.ttl ?? null, ...first())
          seq++
        }
        if (seq === 0) sql.event.run(namespace, revision, 0, 'none', '', null, null, null, null, id ?? null, at)
      })()
    } catch (err) {
      // Some errors (disk full, I/O) make SQLite roll back the whole transaction: the group is lost.
      if (group && !this.#db.inTransaction) this.#groups.fail(group, err)
      throw new UnavailableError(`the node could not write its data file: ${(err as Error).message}`, { cause: err })
    }
    group.namespaces.add(namespace)
    group.commits++
    if (parked) parked.group = group
    for (const key of deletes) loaded.dirty.set(key, null)
    for (const e of puts) loaded.dirty.set(e.key, e)
    if (id !== undefined) {
      loaded.requests.set(id, { revision, at: at!, group })
      if (loaded.requests.size > this.#maxRequests) loaded.requests.delete(loaded.requests.keys().next().value!)
    }
  }
}

/** What a parked commit carries to the write of its later try: its request id, and the group that write joined. */
interface ParkTag {
  requestId: string | undefined
  group: Group | undefined
}

function deliver(sink: WatchSink, event: WatchEvent): void {
  try {
    sink.event(event)
  } catch {
    // A sink that throws must not stop the replay for the others.
  }
}

/** The entry a replayed answer returns: with the TTL it was written with, as the first answer had it. */
function toEntry(e: Stored): Entry {
  const out: Entry = { key: e.key, value: e.value, revision: e.revision, created: e.created }
  if (e.owner !== undefined) out.owner = e.owner
  if (e.ttl !== undefined) out.ttl = e.ttl
  return out
}
