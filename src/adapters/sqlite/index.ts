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
 * with its own revision. The parts: `schema.ts` (tables, migration,
 * statements), `load.ts` (a namespace read back from the file), `group.ts`
 * (group commit and the watches it gates), `store.ts` (the stores, each
 * served by the same local adapter as memory).
 *
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3'
import { loadOptional } from '../kit/load'
import { migrate } from './schema'
import { SqliteStoresImpl } from './store'
import type { SqliteOptions, SqliteStores } from './types'

export type { SqliteOptions, SqliteStores } from './types'

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
  const { mod, inner } = await loadOptional('better-sqlite3', 'better-sqlite3', 'a durable store (SQLite)')
  const Database = (inner ?? mod) as unknown as typeof BetterSqlite3
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
