/**
 * A durable store for the zaris node (`zaris serve --data FILE`): the
 * in-process {@link LocalStore} with every commit and every expiry written
 * through to SQLite (better-sqlite3, loaded only when used) before memory
 * changes and before the commit is acknowledged.
 *
 * Durability: WAL journal with `synchronous = FULL`, one transaction per
 * commit, so an acknowledged commit survives a crash of the process or the
 * machine; a failed write changes nothing and the commit fails.
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
import type { Adapter, CommitResult, Entry, Value, WatchEvent, WatchSink } from '../core/adapter'
import { systemClock, type Clock } from '../core/clock'
import { ClosedError, CompactedError, UnavailableError, UnsupportedError, isZarisError } from '../core/errors'
import { LocalStore, localAdapter, type StoredEntry } from './shared/local-store'

/** Options of {@link openSqlite}. */
export interface SqliteOptions {
  /** The clock TTLs run on. Default: the system's monotonic clock. */
  clock?: Clock
  /** Recent events kept per namespace for watch replays. Default 10 000. */
  historySize?: number
  /** How long a commit's request id is remembered, in ms. Default 10 minutes. */
  requestTtlMs?: number
  /** Most request ids remembered. Default 100 000. */
  maxRequests?: number
}

const SCHEMA_VERSION = 1

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
  /** Stops expiry timers, ends watches and closes the file. */
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
 * optional peer dependency `better-sqlite3`.
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
  try {
    db.pragma('journal_mode = WAL')
    // FULL: the WAL is synced at every commit, so an acknowledged commit survives power loss too.
    db.pragma('synchronous = FULL')
    db.pragma('busy_timeout = 5000')
    migrate(db)
  } catch (err) {
    db.close()
    throw err
  }
  const stores = new SqliteStoresImpl(db, file, options)
  // Load every namespace now, so TTLs restart from the restart, not from a namespace's first use.
  stores.loadAll()
  return stores
}

function migrate(db: BetterSqlite3.Database): void {
  const version = db.pragma('user_version', { simple: true }) as number
  if (version > SCHEMA_VERSION) {
    throw new UnsupportedError(`the data file was written by a newer zaris (schema ${version}; this one reads ${SCHEMA_VERSION})`)
  }
  db.exec(`
    CREATE TABLE IF NOT EXISTS zaris_stores (
      ns TEXT PRIMARY KEY, revision INTEGER NOT NULL, compacted INTEGER NOT NULL DEFAULT 0, epoch TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS zaris_events (
      ns TEXT NOT NULL, revision INTEGER NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, key TEXT NOT NULL,
      value TEXT, created INTEGER, owner TEXT, ttl REAL,
      PRIMARY KEY (ns, revision, seq)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS zaris_entries (
      ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
      revision INTEGER NOT NULL, created INTEGER NOT NULL, owner TEXT, ttl REAL,
      PRIMARY KEY (ns, key)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS zaris_requests (
      ns TEXT NOT NULL, id TEXT NOT NULL, at INTEGER NOT NULL, result TEXT NOT NULL
    );
    CREATE UNIQUE INDEX IF NOT EXISTS zaris_requests_id ON zaris_requests (ns, id);
    PRAGMA user_version = ${SCHEMA_VERSION};
  `)
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
  #writes = 0
  /** The namespace whose commit is running: its deletes are `delete` events, any other is an expiry. */
  #committing: string | undefined
  #closed = false
  readonly #sql: {
    revision: BetterSqlite3.Statement<[string], { revision: number; epoch: string }>
    createStore: BetterSqlite3.Statement<[string, string]>
    entries: BetterSqlite3.Statement<[string], Row>
    setRevision: BetterSqlite3.Statement<[number, string]>
    put: BetterSqlite3.Statement<[string, string, string, number, number, string | null, number | null]>
    del: BetterSqlite3.Statement<[string, string]>
    findRequest: BetterSqlite3.Statement<[string, string], { result: string }>
    putRequest: BetterSqlite3.Statement<[string, string, number, string]>
    pruneOld: BetterSqlite3.Statement<[number]>
    pruneMany: BetterSqlite3.Statement<[number]>
    event: BetterSqlite3.Statement<[string, number, number, string, string, string | null, number | null, string | null, number | null]>
    events: BetterSqlite3.Statement<[string, number], EventRow>
    compacted: BetterSqlite3.Statement<[string], { compacted: number }>
    pruneEvents: BetterSqlite3.Statement<[string, number]>
    setCompacted: BetterSqlite3.Statement<[number, string]>
  }

  constructor(db: BetterSqlite3.Database, file: string, options: SqliteOptions) {
    this.#db = db
    this.file = file
    this.#options = options
    this.#baseClock = options.clock ?? systemClock
    this.#requestTtlMs = options.requestTtlMs ?? 10 * 60_000
    this.#maxRequests = options.maxRequests ?? 100_000
    this.#sql = {
      revision: db.prepare('SELECT revision, epoch FROM zaris_stores WHERE ns = ?'),
      createStore: db.prepare('INSERT INTO zaris_stores (ns, revision, compacted, epoch) VALUES (?, 0, 0, ?)'),
      entries: db.prepare('SELECT key, value, revision, created, owner, ttl FROM zaris_entries WHERE ns = ?'),
      setRevision: db.prepare('UPDATE zaris_stores SET revision = ? WHERE ns = ?'),
      put: db.prepare(
        `INSERT INTO zaris_entries (ns, key, value, revision, created, owner, ttl) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, revision = excluded.revision,
           created = excluded.created, owner = excluded.owner, ttl = excluded.ttl`,
      ),
      del: db.prepare('DELETE FROM zaris_entries WHERE ns = ? AND key = ?'),
      findRequest: db.prepare('SELECT result FROM zaris_requests WHERE ns = ? AND id = ?'),
      putRequest: db.prepare('INSERT OR REPLACE INTO zaris_requests (ns, id, at, result) VALUES (?, ?, ?, ?)'),
      pruneOld: db.prepare('DELETE FROM zaris_requests WHERE at < ?'),
      pruneMany: db.prepare('DELETE FROM zaris_requests WHERE rowid <= (SELECT max(rowid) FROM zaris_requests) - ?'),
      event: db.prepare('INSERT INTO zaris_events (ns, revision, seq, type, key, value, created, owner, ttl) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
      events: db.prepare('SELECT revision, type, key, value, created, owner, ttl FROM zaris_events WHERE ns = ? AND revision > ? ORDER BY revision, seq'),
      compacted: db.prepare('SELECT compacted FROM zaris_stores WHERE ns = ?'),
      pruneEvents: db.prepare('DELETE FROM zaris_events WHERE ns = ? AND revision <= ?'),
      setCompacted: db.prepare('UPDATE zaris_stores SET compacted = max(compacted, ?) WHERE ns = ?'),
    }
    this.#historySize = options.historySize ?? 10_000
  }

  /** @internal Loads every namespace the file holds. */
  loadAll(): void {
    for (const { ns } of this.#db.prepare('SELECT ns FROM zaris_stores').all() as Array<{ ns: string }>) this.#load(ns)
  }

  position(namespace: string): { revision: number; epoch: string } {
    const { store, epoch } = this.#load(namespace)
    return { revision: store.revision, epoch }
  }

  adapter(namespace: string): Adapter {
    const { store, clock } = this.#load(namespace)
    const base = localAdapter('sqlite', store)
    const sql = this.#sql
    const open = () => {
      if (this.#closed) throw new ClosedError('the SQLite store is closed')
    }
    return {
      ...base,
      name: 'sqlite',
      get: async (key) => {
        open()
        return base.get(key)
      },
      list: async (prefix) => {
        open()
        return base.list(prefix)
      },
      commit: async (checks, ops, options) => {
        open()
        const id = options?.requestId
        if (id !== undefined) {
          const seen = sql.findRequest.get(namespace, id)
          if (seen) return JSON.parse(seen.result) as CommitResult
        }
        // Expiries due now are written first, under their own revisions; the
        // clock then stands still through the commit, so the one write made
        // while `committing` is set is the commit's own. The store commits
        // synchronously inside base.commit's call, so nothing else runs between.
        let result: Promise<CommitResult>
        clock.freeze()
        try {
          void store.size
          this.#committing = namespace
          this.#pending = id === undefined ? undefined : { namespace, id }
          result = base.commit(checks, ops)
        } finally {
          this.#committing = undefined
          this.#pending = undefined
          clock.thaw()
        }
        return result
      },
      watch: async (prefix, sink, fromRevision) => {
        open()
        if (fromRevision === undefined) return base.watch(prefix, sink)
        // The in-memory history first; if it does not reach back far enough
        // (a restart emptied it), the file's history. All of it synchronous,
        // so no event falls between the replay and the subscription.
        let compacted = false
        let subscribing = true
        const probe: WatchSink = {
          event: (ev) => sink.event(ev),
          error: (err) => {
            if (subscribing && isZarisError(err, 'COMPACTED')) compacted = true
            else sink.error(err)
          },
        }
        const fromMemory = base.watch(prefix, probe, fromRevision)
        subscribing = false
        if (!compacted) return fromMemory
        const gone = sql.compacted.get(namespace)?.compacted ?? 0
        if (fromRevision < gone) {
          sink.error(new CompactedError(`watch from revision ${fromRevision}: history up to revision ${gone} is gone; read the current state and watch from its revision`))
          return () => {}
        }
        const now = store.revision
        for (const row of sql.events.all(namespace, fromRevision)) {
          if (row.revision <= now && row.key.startsWith(prefix)) deliver(sink, toEvent(row))
        }
        return base.watch(prefix, sink, now)
      },
    }
  }

  #pending: { namespace: string; id: string } | undefined

  close(): void {
    if (this.#closed) return
    this.#closed = true
    for (const { store } of this.#stores.values()) store.close()
    this.#stores.clear()
    this.#db.close()
  }

  #load(namespace: string): Loaded {
    if (this.#closed) throw new ClosedError('the SQLite store is closed')
    let loaded = this.#stores.get(namespace)
    if (loaded) return loaded
    const clock = new FreezableClock(this.#baseClock)
    const now = clock.now()
    let row = this.#sql.revision.get(namespace)
    if (!row) {
      row = { revision: 0, epoch: newEpoch() }
      this.#sql.createStore.run(namespace, row.epoch)
    }
    const revision = row.revision
    const entries: StoredEntry[] = this.#sql.entries.all(namespace).map((r) => {
      const e: StoredEntry = { key: r.key, value: JSON.parse(r.value) as Value, revision: r.revision, created: r.created }
      if (r.owner !== null) e.owner = r.owner
      if (r.ttl !== null) {
        e.ttl = r.ttl
        e.expiresAt = now + r.ttl // the whole TTL again, from the restart
      }
      return e
    })
    const store = new LocalStore({
      clock,
      historySize: this.#options.historySize,
      initial: { revision, entries },
      persistence: { write: (rev, puts, deletes) => this.#write(namespace, rev, puts, deletes) },
    })
    loaded = { store, clock, epoch: row.epoch }
    this.#stores.set(namespace, loaded)
    return loaded
  }

  #write(namespace: string, revision: number, puts: StoredEntry[], deletes: string[]): void {
    const sql = this.#sql
    const pending = this.#pending?.namespace === namespace ? this.#pending : undefined
    const deleteType = this.#committing === namespace ? 'delete' : 'expire'
    try {
      this.#db.transaction(() => {
        sql.setRevision.run(revision, namespace)
        let seq = 0
        // Events in the order the store reports them: deletes, then puts.
        for (const key of deletes) {
          sql.del.run(namespace, key)
          sql.event.run(namespace, revision, seq++, deleteType, key, null, null, null, null)
        }
        for (const e of puts) {
          const value = JSON.stringify(e.value)
          sql.put.run(namespace, e.key, value, e.revision, e.created, e.owner ?? null, e.ttl ?? null)
          sql.event.run(namespace, revision, seq++, 'put', e.key, value, e.created, e.owner ?? null, e.ttl ?? null)
        }
        if (revision % 1_000 === 0) {
          sql.pruneEvents.run(namespace, revision - this.#historySize)
          sql.setCompacted.run(revision - this.#historySize, namespace)
        }
        if (pending) {
          const result: CommitResult = { ok: true, revision, entries: puts.map(toEntry), deleted: deletes }
          sql.putRequest.run(namespace, pending.id, Date.now(), JSON.stringify(result))
        }
        if (++this.#writes % 1_000 === 0) {
          sql.pruneOld.run(Date.now() - this.#requestTtlMs)
          sql.pruneMany.run(this.#maxRequests)
        }
      })()
    } catch (err) {
      throw new UnavailableError(`the node could not write its data file: ${(err as Error).message}`, { cause: err })
    }
  }
}

interface Loaded {
  store: LocalStore
  clock: FreezableClock
  epoch: string
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
