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
import type { Value, WatchEvent } from '../../core/contract/adapter'
import { InternalError, UnsupportedError } from '../../core/contract/errors'
import { checkKey, checkValue } from '../../core/contract/validate'
import type { Stored } from '../kit/write'

/** The schema this code writes; a newer file is refused. */
export const SCHEMA_VERSION = 2

/** An entry as `zaris_entries` and a put event hold it. */
export interface Row {
  key: string
  value: string
  revision: number
  created: number
  owner: string | null
  ttl: number | null
}

/** An event as `zaris_events` holds it. */
export interface EventRow {
  revision: number
  type: string
  key: string
  value: string | null
  created: number | null
  owner: string | null
  ttl: number | null
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

/**
 * The stored entry a row (or a put event) holds, checked as a commit's input
 * is: a row that is not (a damaged file, or one written by hand) fails the
 * load with an error naming where it is (`where`: the file, the namespace
 * and what the row is) and its key, rather than a bare JSON error or a store
 * that serves it.
 */
export function fromRow(r: Row, where: string): Stored {
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
    const e: Stored = { key: r.key, value, revision: r.revision, created: r.created }
    if (r.owner !== null) e.owner = r.owner
    if (r.ttl !== null) e.ttl = r.ttl
    return e
  } catch (err) {
    const key = typeof r.key === 'string' ? JSON.stringify(r.key.slice(0, 200)) : String(r.key)
    throw new InternalError(`the SQLite file is damaged: ${where} key ${key}: ${(err as Error).message}; restore it from a backup, or delete that row`)
  }
}

/** Where a row of `namespace` in `file` is, for {@link fromRow}'s error: `what` names the row (an entry, an event of revision N). */
export function rowPlace(file: string, namespace: string, what: string): string {
  return `${file}: namespace ${JSON.stringify(namespace)}, ${what}`
}

/** The watch event an event row holds. */
export function toEvent(row: EventRow): WatchEvent {
  if (row.type !== 'put') return { type: row.type as 'delete' | 'expire', key: row.key, revision: row.revision }
  const ev: WatchEvent = { type: 'put', key: row.key, revision: row.revision, value: JSON.parse(row.value!) as Value, created: row.created! }
  if (row.owner !== null) ev.owner = row.owner
  if (row.ttl !== null) ev.ttl = row.ttl
  return ev
}
