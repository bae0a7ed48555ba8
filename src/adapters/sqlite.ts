/**
 * A durable store for the zaris node (`zaris serve --data FILE`): the
 * in-process {@link LocalStore} with every commit and every expiry written
 * through to SQLite (better-sqlite3, loaded only when used) before memory
 * changes and before the commit is acknowledged.
 *
 * Durability: WAL journal with `synchronous = FULL`, so an acknowledged
 * commit survives a crash of the process or the machine. Commits made while
 * a transaction is still being written are written together in the next one
 * (group commit: one fsync for all of them); each is answered, and its events
 * shown to watches, only once its transaction is on disk, and reads see only
 * what is on disk. A commit writes one row per event and nothing else: the
 * revision is the events' maximum, a request id is a column of the commit's
 * first event, and the entries table is a checkpoint brought up to date every
 * 1 000 revisions (a load replays the events after it). A failed write fails
 * its commit only; a failed transaction fails the commits in it and reloads
 * their namespaces from the file.
 *
 * After a restart:
 * - the revision continues from the last one written, so fencing tokens keep
 *   growing;
 * - every entry with a TTL gets the whole TTL it was last written with again,
 *   counted from the restart, whatever the wall clock did meanwhile: no lock
 *   is freed before its holder could have known it lost it (holders count
 *   their TTL from before their last successful write);
 * - the watch history is kept in the file too (the last `historySize`
 *   events), so a watch resuming across the restart misses nothing;
 * - commits made with a request id are remembered (10 minutes by default),
 *   so a commit whose answer was lost in the crash is not applied twice
 *   when the client retries it.
 *
 * Node only. Several namespaces share one file; each is a store of its own
 * with its own revision.
 *
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3'
import type { Adapter, Check, CommitResult, Entry, HistoryLimits, HistoryPage, Op, Unsubscribe, Value, WatchEvent, WatchSink } from '../core/adapter'
import { systemClock, type Clock } from '../core/clock'
import { ClosedError, CompactedError, InternalError, UnavailableError, UnsupportedError, isZarisError } from '../core/errors'
import { checkKey, checkListOptions, checkPrefix, checkValue } from '../core/validate'
import type { LogBudget } from './shared/event-log'
import { LocalStore, type StoreQuota, type StoredEntry } from './shared/local-store'

/** Options of {@link openSqlite}. */
export interface SqliteOptions {
  /** The clock TTLs run on. Default: the system's monotonic clock. */
  clock?: Clock
  /** Recent events kept per namespace for watch replays. Default 10 000. */
  historySize?: number
  /** Most bytes of recent events kept in memory per namespace, and a budget the namespaces share (see event-log.ts). */
  historyBytes?: number
  historyBudget?: LogBudget
  /** Most bytes of entries, shared with other stores: a commit that would pass it gets TOO_LARGE. */
  quota?: StoreQuota
  /** How long a commit's request id is remembered, in ms. Default 10 minutes. */
  requestTtlMs?: number
  /** Most request ids remembered per namespace. Default 100 000. */
  maxRequests?: number
  /**
   * @internal Called just before a group's transaction is committed; a throw
   * fails the group as a failed disk write would (for tests).
   */
  beforeSync?: () => void
}

const SCHEMA_VERSION = 2
/** Revisions between two checkpoints of a namespace's entries (each also prunes its history). */
const CHECKPOINT_EVERY = 1_000
/** Most commits one group takes before it is written at once. */
const MAX_GROUP = 1_000

/**
 * A SQLite file holding the stores of any number of namespaces.
 *
 * @example
 * const db = await openSqlite('zaris.db')
 * const client = new Client(db.adapter('demo'))
 */
export interface SqliteStores {
  /** The file. */
  readonly file: string
  /** An adapter on the namespace's store (loaded from the file on first use). */
  adapter(namespace: string): Adapter
  /** The namespace's current revision, and the epoch that names this file's store of it. */
  position(namespace: string): { revision: number; epoch: string }
  /** Writes what is pending, stops expiry timers, ends watches and closes the file. */
  close(): void
}

interface Row {
  key: string
  value: string
  revision: number
  created: number
  owner: string | null
  ttl: number | null
}

/**
 * Opens (creating if needed) a SQLite file as zaris stores. Needs the
 * optional peer dependency `better-sqlite3`. A file written by an older
 * zaris is upgraded in place; one written by a newer zaris is refused.
 *
 * @example
 * const stores = await openSqlite('/var/lib/zaris/data.db')
 * const adapter = stores.adapter('jobs')
 */
export async function openSqlite(file: string, options: SqliteOptions = {}): Promise<SqliteStores> {
  let Database: typeof BetterSqlite3
  try {
    const mod = (await import('better-sqlite3')) as unknown as { default?: typeof BetterSqlite3 }
    Database = mod.default ?? (mod as unknown as typeof BetterSqlite3)
  } catch (err) {
    throw new UnsupportedError(`a durable store needs the package better-sqlite3 (npm install better-sqlite3): ${(err as Error).message}`)
  }
  const db = new Database(file)
  let legacyRequests: boolean
  try {
    db.pragma('journal_mode = WAL')
    // FULL: the WAL is synced at every commit, so an acknowledged commit survives power loss too.
    // (NORMAL would not: in WAL mode it syncs only at checkpoints, so the last commits can vanish.)
    db.pragma('synchronous = FULL')
    db.pragma('busy_timeout = 5000')
    legacyRequests = migrate(db)
  } catch (err) {
    db.close()
    throw err
  }
  const stores = new SqliteStoresImpl(db, file, options, legacyRequests)
  // Load every namespace now, so TTLs restart from the restart, not from a namespace's first use.
  stores.loadAll()
  return stores
}

/**
 * Brings the file to the current schema. Schema 1 (the first release) kept
 * the current revision in `zaris_stores` and request ids in their own table;
 * schema 2 writes only `zaris_events` per commit: `zaris_stores.revision`
 * becomes the checkpoint the entries table reflects (which a schema 1 file's
 * revision already is), and request ids are columns of the events. A schema 1
 * `zaris_requests` table is still read until its ids expire.
 *
 * @returns whether the file has a schema 1 `zaris_requests` table.
 */
function migrate(db: BetterSqlite3.Database): boolean {
  const version = db.pragma('user_version', { simple: true }) as number
  if (version > SCHEMA_VERSION) {
    throw new UnsupportedError(`the data file was written by a newer zaris (schema ${version}; this one reads ${SCHEMA_VERSION})`)
  }
  db.transaction(() => {
    db.exec(`
      CREATE TABLE IF NOT EXISTS zaris_stores (
        ns TEXT PRIMARY KEY, revision INTEGER NOT NULL, compacted INTEGER NOT NULL DEFAULT 0, epoch TEXT NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS zaris_events (
        ns TEXT NOT NULL, revision INTEGER NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, key TEXT NOT NULL,
        value TEXT, created INTEGER, owner TEXT, ttl REAL, request_id TEXT, at INTEGER,
        PRIMARY KEY (ns, revision, seq)
      ) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS zaris_entries (
        ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
        revision INTEGER NOT NULL, created INTEGER NOT NULL, owner TEXT, ttl REAL,
        PRIMARY KEY (ns, key)
      ) WITHOUT ROWID;
    `)
    const columns = new Set((db.prepare('PRAGMA table_info(zaris_events)').all() as Array<{ name: string }>).map((c) => c.name))
    if (!columns.has('request_id')) db.exec('ALTER TABLE zaris_events ADD COLUMN request_id TEXT')
    if (!columns.has('at')) db.exec('ALTER TABLE zaris_events ADD COLUMN at INTEGER')
    db.pragma(`user_version = ${SCHEMA_VERSION}`)
  })()
  return db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'zaris_requests'`).get() !== undefined
}

/**
 * Commits written together in one SQLite transaction, hence one fsync:
 * every commit made while the transaction is open joins it, and it is
 * committed on the next turn of the event loop (or before anything reads).
 * Nothing in it is acknowledged, or shown to a watch, before that commit.
 */
interface Group {
  namespaces: Set<string>
  commits: number
  /** Watch deliveries held until the group is on disk, in order. */
  held: Array<() => void>
  done: Promise<void>
  resolve: () => void
  reject: (err: Error) => void
  failed?: UnavailableError
}

/**
 * A commit remembered by its request id. Its answer is rebuilt from its
 * events when asked (they are kept while it is remembered), so memory holds
 * no values for it.
 */
interface Remembered {
  revision: number
  at: number
  /** The group it was written in. */
  group?: Group
  /** The answer as a schema 1 file stored it. */
  legacy?: string
}

interface Loaded {
  store: LocalStore
  clock: FreezableClock
  epoch: string
  /** The revision the entries table reflects. */
  checkpoint: number
  /** Entries changed since the checkpoint (null: deleted), written at the next one. */
  dirty: Map<string, StoredEntry | null>
  /** Request ids, oldest first. */
  requests: Map<string, Remembered>
  sinks: Set<GatedSink>
}

/** A watch's sink that holds deliveries while a group is not yet on disk. */
class GatedSink implements WatchSink {
  #dead = false
  constructor(
    readonly sink: WatchSink,
    readonly hold: (deliver: () => void) => void,
  ) {}
  event(ev: WatchEvent): void {
    if (!this.#dead) this.hold(() => !this.#dead && this.sink.event(ev))
  }
  error(err: Error): void {
    if (!this.#dead) this.hold(() => this.kill(err))
  }
  /** Ends the watch now with `err`; nothing more is delivered. */
  kill(err: Error): void {
    if (this.#dead) return
    this.#dead = true
    this.sink.error(err)
  }
}

class SqliteStoresImpl implements SqliteStores {
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
  #group: Group | undefined
  #closed = false
  readonly #sql: ReturnType<typeof prepare>

  constructor(db: BetterSqlite3.Database, file: string, options: SqliteOptions, legacyRequests: boolean) {
    this.#db = db
    this.file = file
    this.#options = options
    this.#baseClock = options.clock ?? systemClock
    this.#requestTtlMs = options.requestTtlMs ?? 10 * 60_000
    this.#maxRequests = options.maxRequests ?? 100_000
    this.#historySize = options.historySize ?? 10_000
    this.#sql = prepare(db, legacyRequests)
  }

  /** @internal Loads every namespace the file holds. */
  loadAll(): void {
    for (const { ns } of this.#db.prepare('SELECT ns FROM zaris_stores').all() as Array<{ ns: string }>) this.#load(ns)
  }

  position(namespace: string): { revision: number; epoch: string } {
    this.#flush()
    const { store, epoch } = this.#load(namespace)
    return { revision: store.revision, epoch }
  }

  adapter(namespace: string): Adapter {
    this.#load(namespace)
    let closed = false
    const subscriptions = new Set<Unsubscribe>()
    const open = () => {
      if (this.#closed) throw new ClosedError('the SQLite store is closed')
      if (closed) throw new ClosedError('the sqlite adapter is closed')
    }
    return {
      name: 'sqlite',
      capabilities: { history: true },
      history: async (prefix, after, limits) => {
        open()
        return this.#history(namespace, prefix, after, limits)
      },
      get: async (key) => {
        open()
        return this.#read(namespace, (store) => store.get(key))
      },
      list: async (prefix, options) => {
        open()
        const { after, limit } = checkListOptions(options)
        return this.#read(namespace, (store) => store.list(checkPrefix(prefix), after, limit))
      },
      commit: async (checks, ops, options) => {
        open()
        return this.#commit(namespace, checks, ops, options?.requestId, options?.seen)
      },
      watch: async (prefix, sink, fromRevision) => {
        open()
        const stop = this.#watch(namespace, prefix, sink, fromRevision)
        subscriptions.add(stop)
        return () => {
          stop()
          subscriptions.delete(stop)
        }
      },
      close: async () => {
        if (closed) return
        closed = true
        for (const stop of subscriptions) stop()
        subscriptions.clear()
      },
    }
  }

  close(): void {
    if (this.#closed) return
    this.#flush()
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
  /**
   * A page of history: from memory while it reaches back far enough, else
   * from the file's events, read row by row up to the page's limits.
   */
  #history(namespace: string, prefix: string, after: number, limits: HistoryLimits): HistoryPage {
    this.#flush()
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

  #read<T>(namespace: string, read: (store: LocalStore) => T): T {
    this.#flush()
    const out = read(this.#load(namespace).store)
    this.#flushOrThrow()
    return out
  }

  async #commit(namespace: string, checks: Check[], ops: Op[], id: string | undefined, seen: number | undefined): Promise<CommitResult> {
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
    let result: CommitResult
    clock.freeze()
    try {
      void store.size
      this.#committing = namespace
      this.#pending = id
      result = store.commit(checks, ops, seen)
    } finally {
      this.#committing = undefined
      this.#pending = undefined
      clock.thaw()
    }
    const group = this.#group
    if (group === undefined) return result
    if (group.commits >= MAX_GROUP) this.#flush()
    // A success, and a failed check too, rest on the group's commits: neither is told before they are on disk.
    await group.done
    return result
  }

  /** The answer of the commit that made `revision`, from its events. */
  #answer(namespace: string, revision: number): CommitResult {
    const answer = { ok: true as const, revision, entries: [] as Entry[], deleted: [] as string[] }
    for (const e of this.#sql.commitEvents.all(namespace, revision)) {
      if (e.type === 'put') answer.entries.push(toEntry(fromRow({ ...e, value: e.value!, created: e.created! }, `${this.file}: namespace ${JSON.stringify(namespace)}, event of revision ${revision} for`)))
      else if (e.type !== 'none') answer.deleted.push(e.key)
    }
    return answer
  }

  #watch(namespace: string, prefix: string, sink: WatchSink, fromRevision: number | undefined): Unsubscribe {
    this.#flush()
    const loaded = this.#load(namespace)
    const { store } = loaded
    const gated = new GatedSink(sink, (deliver) => this.#hold(deliver))
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
    this.#flush()
    return () => {
      unsubscribe()
      loaded.sinks.delete(gated)
    }
  }

  #hold(deliver: () => void): void {
    if (this.#group) this.#group.held.push(deliver)
    else deliver()
  }

  /** The open group, opened if there is none. */
  #begin(): Group {
    if (this.#group) return this.#group
    this.#sql.begin.run()
    let resolve!: () => void
    let reject!: (err: Error) => void
    const done = new Promise<void>((res, rej) => {
      resolve = res
      reject = rej
    })
    done.catch(() => {}) // a group nobody waits on (expiries only) must not be an unhandled rejection
    const group: Group = { namespaces: new Set(), commits: 0, held: [], done, resolve, reject }
    this.#group = group
    setImmediate(() => this.#flush(group))
    return group
  }

  /** Commits the open group (one fsync), then tells its watches and its commits. */
  #flush(group = this.#group): void {
    if (group === undefined || group !== this.#group) return
    this.#group = undefined
    try {
      this.#maintain(group)
      this.#options.beforeSync?.()
      this.#sql.commit.run()
    } catch (err) {
      this.#fail(group, err)
      return
    }
    for (const deliver of group.held) {
      try {
        deliver()
      } catch {
        // A sink that throws must not stop the others.
      }
    }
    group.held = []
    group.resolve()
  }

  #flushOrThrow(): void {
    const group = this.#group
    this.#flush()
    if (group?.failed) throw group.failed
  }

  /**
   * A group that did not reach the disk: its commits fail, its held events
   * are dropped, and every namespace it wrote is reloaded from the file, so
   * memory again holds only what is on disk. Their watches end (unavailable),
   * and resume from the last revision they saw.
   */
  #fail(group: Group, err: unknown): void {
    if (group.failed) return
    const error = new UnavailableError(`the node could not write its data file: ${(err as Error).message}`, { cause: err })
    group.failed = error
    if (this.#group === group) this.#group = undefined
    try {
      if (this.#db.inTransaction) this.#sql.rollback.run()
    } catch {
      // Already rolled back by SQLite.
    }
    group.held = []
    for (const namespace of group.namespaces) {
      const loaded = this.#stores.get(namespace)
      if (!loaded) continue
      this.#stores.delete(namespace)
      for (const sink of loaded.sinks) sink.kill(error)
      loaded.sinks.clear()
      loaded.store.close()
    }
    group.reject(error)
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
    const sql = this.#sql
    const clock = new FreezableClock(this.#baseClock)
    const now = clock.now()
    let row = sql.storeRow.get(namespace)
    if (!row) {
      row = { revision: 0, epoch: newEpoch() }
      sql.createStore.run(namespace, row.epoch)
      // Inside an open group the new row is written (or lost) with it.
      this.#group?.namespaces.add(namespace)
    }
    const checkpoint = row.revision
    const entries = new Map<string, StoredEntry>()
    for (const r of sql.entries.all(namespace)) entries.set(r.key, fromRow(r, `${this.file}: namespace ${JSON.stringify(namespace)}, entry`))
    const dirty = new Map<string, StoredEntry | null>()
    const requests = new Map<string, Remembered>()
    const since = Date.now() - this.#requestTtlMs
    if (sql.legacyRequests) {
      for (const r of sql.legacyRequests.all(namespace, since)) {
        const result = JSON.parse(r.result) as CommitResult
        requests.set(r.id, { revision: result.ok ? result.revision : 0, at: r.at, legacy: r.result })
      }
    }
    for (const r of sql.requests.iterate(namespace, since)) requests.set(r.id, { revision: r.revision, at: r.at })
    // Replay the events after the checkpoint.
    let revision = checkpoint
    for (const e of sql.replay.iterate(namespace, checkpoint)) {
      revision = e.revision
      if (e.type === 'none') continue
      const put = e.type === 'put' ? fromRow({ ...e, value: e.value!, created: e.created! }, `${this.file}: namespace ${JSON.stringify(namespace)}, event of revision ${e.revision} for`) : undefined
      if (put) entries.set(e.key, put)
      else entries.delete(e.key)
      dirty.set(e.key, put ?? null)
    }
    for (const e of entries.values()) if (e.ttl !== undefined) e.expiresAt = now + e.ttl // the whole TTL again, from the restart
    const loaded: Loaded = { store: undefined as unknown as LocalStore, clock, epoch: row.epoch, checkpoint, dirty, requests, sinks: new Set() }
    loaded.store = new LocalStore({
      clock,
      historySize: this.#options.historySize,
      historyBytes: this.#options.historyBytes,
      historyBudget: this.#options.historyBudget,
      quota: this.#options.quota,
      initial: { revision, entries: entries.values() },
      persistence: { write: (rev, puts, deletes) => this.#write(namespace, loaded, rev, puts, deletes) },
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
  #write(namespace: string, loaded: Loaded, revision: number, puts: StoredEntry[], deletes: string[]): void {
    const sql = this.#sql
    const id = this.#committing === namespace ? this.#pending : undefined
    const deleteType = this.#committing === namespace ? 'delete' : 'expire'
    let group: Group | undefined
    const at = id === undefined ? null : Date.now()
    try {
      group = this.#begin()
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
      if (group && !this.#db.inTransaction) this.#fail(group, err)
      throw new UnavailableError(`the node could not write its data file: ${(err as Error).message}`, { cause: err })
    }
    group.namespaces.add(namespace)
    group.commits++
    for (const key of deletes) loaded.dirty.set(key, null)
    for (const e of puts) loaded.dirty.set(e.key, e)
    if (id !== undefined) {
      loaded.requests.set(id, { revision, at: at!, group })
      if (loaded.requests.size > this.#maxRequests) loaded.requests.delete(loaded.requests.keys().next().value!)
    }
  }
}

function prepare(db: BetterSqlite3.Database, legacyRequests: boolean) {
  return {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    storeRow: db.prepare<[string], { revision: number; epoch: string }>('SELECT revision, epoch FROM zaris_stores WHERE ns = ?'),
    createStore: db.prepare<[string, string]>('INSERT INTO zaris_stores (ns, revision, compacted, epoch) VALUES (?, 0, 0, ?)'),
    entries: db.prepare<[string], Row>('SELECT key, value, revision, created, owner, ttl FROM zaris_entries WHERE ns = ?'),
    setCheckpoint: db.prepare<[number, string]>('UPDATE zaris_stores SET revision = ? WHERE ns = ?'),
    put: db.prepare<[string, string, string, number, number, string | null, number | null]>(
      `INSERT INTO zaris_entries (ns, key, value, revision, created, owner, ttl) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, revision = excluded.revision,
         created = excluded.created, owner = excluded.owner, ttl = excluded.ttl`,
    ),
    del: db.prepare<[string, string]>('DELETE FROM zaris_entries WHERE ns = ? AND key = ?'),
    event: db.prepare<[string, number, number, string, string, string | null, number | null, string | null, number | null, string | null, number | null]>(
      'INSERT INTO zaris_events (ns, revision, seq, type, key, value, created, owner, ttl, request_id, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    events: db.prepare<[string, number], EventRow>(
      `SELECT revision, type, key, value, created, owner, ttl FROM zaris_events WHERE ns = ? AND revision > ? AND type <> 'none' ORDER BY revision, seq`,
    ),
    replay: db.prepare<[string, number], EventRow>(
      'SELECT revision, type, key, value, created, owner, ttl FROM zaris_events WHERE ns = ? AND revision > ? ORDER BY revision, seq',
    ),
    commitEvents: db.prepare<[string, number], EventRow>(
      'SELECT revision, type, key, value, created, owner, ttl FROM zaris_events WHERE ns = ? AND revision = ? ORDER BY seq',
    ),
    requests: db.prepare<[string, number], { id: string; revision: number; at: number }>(
      'SELECT request_id AS id, revision, at FROM zaris_events WHERE ns = ? AND request_id IS NOT NULL AND at >= ? ORDER BY revision',
    ),
    compacted: db.prepare<[string], { compacted: number }>('SELECT compacted FROM zaris_stores WHERE ns = ?'),
    pruneEvents: db.prepare<[string, number]>('DELETE FROM zaris_events WHERE ns = ? AND revision <= ?'),
    setCompacted: db.prepare<[number, string]>('UPDATE zaris_stores SET compacted = max(compacted, ?) WHERE ns = ?'),
    legacyRequests: legacyRequests
      ? db.prepare<[string, number], { id: string; at: number; result: string }>('SELECT id, at, result FROM zaris_requests WHERE ns = ? AND at >= ? ORDER BY rowid')
      : undefined,
    pruneLegacy: legacyRequests ? db.prepare<[string, number]>('DELETE FROM zaris_requests WHERE ns = ? AND at < ?') : undefined,
  }
}

/**
 * A stored row as an entry, checked as a commit's input is: a row that is
 * not (a damaged file, or one written by hand) fails the load with an error
 * naming where it is (`where`: the file, the namespace and what the row is)
 * and its key, rather than a bare JSON error or a store that serves it.
 */
function fromRow(r: Row, where: string): StoredEntry {
  try {
    checkKey(r.key)
    let value: Value
    try {
      value = JSON.parse(r.value) as Value
    } catch {
      throw new Error('its value is not JSON')
    }
    checkValue(value)
    const revisionOk = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 1
    if (!revisionOk(r.revision) || !revisionOk(r.created) || r.created > r.revision) throw new Error(`its revision (${r.revision}) and created (${r.created}) are not revisions`)
    if (r.owner !== null && (typeof r.owner !== 'string' || r.owner === '')) throw new Error('its owner is not a string')
    if (r.ttl !== null && !(typeof r.ttl === 'number' && r.ttl > 0)) throw new Error('its ttl is not a positive number')
    const e: StoredEntry = { key: r.key, value, revision: r.revision, created: r.created }
    if (r.owner !== null) e.owner = r.owner
    if (r.ttl !== null) e.ttl = r.ttl
    return e
  } catch (err) {
    const key = typeof r.key === 'string' ? JSON.stringify(r.key.slice(0, 200)) : String(r.key)
    throw new InternalError(`the SQLite file is damaged: ${where} key ${key}: ${(err as Error).message}; restore it from a backup, or delete that row`)
  }
}

/** A random id for one store's life in this file. */
function newEpoch(): string {
  const bytes = new Uint8Array(9)
  globalThis.crypto.getRandomValues(bytes)
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}

interface EventRow {
  revision: number
  type: string
  key: string
  value: string | null
  created: number | null
  owner: string | null
  ttl: number | null
}

function toEvent(row: EventRow): WatchEvent {
  if (row.type !== 'put') return { type: row.type as 'delete' | 'expire', key: row.key, revision: row.revision }
  const ev: WatchEvent = { type: 'put', key: row.key, revision: row.revision, value: JSON.parse(row.value!) as Value, created: row.created! }
  if (row.owner !== null) ev.owner = row.owner
  if (row.ttl !== null) ev.ttl = row.ttl
  return ev
}

function deliver(sink: WatchSink, event: WatchEvent): void {
  try {
    sink.event(event)
  } catch {
    // A sink that throws must not stop the replay for the others.
  }
}

function toEntry(e: StoredEntry): Entry {
  const out: Entry = { key: e.key, value: e.value, revision: e.revision, created: e.created }
  if (e.owner !== undefined) out.owner = e.owner
  if (e.ttl !== undefined) out.ttl = e.ttl
  return out
}

/** A clock that can stand still for the length of one synchronous commit. */
class FreezableClock implements Clock {
  readonly #base: Clock
  #frozen: number | undefined
  constructor(base: Clock) {
    this.#base = base
  }
  now(): number {
    return this.#frozen ?? this.#base.now()
  }
  setTimeout(fn: () => void, ms: number) {
    return this.#base.setTimeout(fn, ms)
  }
  clearTimeout(handle: Parameters<Clock['clearTimeout']>[0]): void {
    this.#base.clearTimeout(handle)
  }
  freeze(): void {
    this.#frozen = this.#base.now()
  }
  thaw(): void {
    this.#frozen = undefined
  }
}
