/**
 * The SQLite file's layout, and the statements the store runs on it. Schema
 * 2: `zaris_stores` (one row per namespace: the checkpoint revision, the
 * revision up to which history is gone, the epoch), `zaris_events` (one row
 * per event, a commit's request id on its first), `zaris_entries` (the
 * entries as of the checkpoint).
 *
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3'
import { UnsupportedError } from '../../core/contract/errors'
import type { EventRow, Row } from '../kit/rows'

export { fromRow, rowPlace, toEvent, type EventRow, type Row } from '../kit/rows'

/** The schema this code writes; a newer file is refused. */
export const SCHEMA_VERSION = 2

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
export function migrate(db: BetterSqlite3.Database): boolean {
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

/** A statement that takes `P` and answers rows of `R`. */
type Query<P extends unknown[], R = unknown> = BetterSqlite3.Statement<P, R>

/** The statements the store runs, prepared once per file. */
export interface Statements {
  begin: Query<[]>
  commit: Query<[]>
  rollback: Query<[]>
  storeRow: Query<[string], { revision: number; epoch: string }>
  createStore: Query<[string, string]>
  entries: Query<[string], Row>
  setCheckpoint: Query<[number, string]>
  put: Query<[string, string, string, number, number, string | null, number | null]>
  del: Query<[string, string]>
  event: Query<[string, number, number, string, string, string | null, number | null, string | null, number | null, string | null, number | null]>
  events: Query<[string, number], EventRow>
  replay: Query<[string, number], EventRow>
  commitEvents: Query<[string, number], EventRow>
  requests: Query<[string, number], { id: string; revision: number; at: number }>
  compacted: Query<[string], { compacted: number }>
  pruneEvents: Query<[string, number]>
  setCompacted: Query<[number, string]>
  /** A schema 1 file's request table, read until its ids expire. */
  legacyRequests: Query<[string, number], { id: string; at: number; result: string }> | undefined
  pruneLegacy: Query<[string, number]> | undefined
}

/** Prepares every statement; `legacyRequests`: the file has a schema 1 `zaris_requests` table still read. */
export function prepare(db: BetterSqlite3.Database, legacyRequests: boolean): Statements {
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
