/**
 * The `file://` store's tables, and the statements a process runs on them.
 * Every process of the machine reads and writes these same rows; nothing of
 * the store's state lives only in one process's memory.
 *
 * - `zaris_file_meta`: the schema, and the boot of the machine that last
 *   opened the file (a new boot restarts TTLs and ends the old boot's owners).
 * - `zaris_file_spaces`: one row per namespace: a floor for its revision
 *   (the revision is the larger of it and the last event's: every revision
 *   writes an event, so a commit does not write this row), the revision
 *   reserved on disk (tokens never repeat, even after a power cut: see
 *   ledger.ts), how far its history is pruned, a recent clock reading
 *   (written at most every {@link CLOCK_EVERY_MS}).
 * - `zaris_file_entries`: the live entries (and expired ones not yet
 *   reported), keyed by the key's UTF-16BE bytes so that SQLite's byte order
 *   is JavaScript's UTF-16 code unit order; `expires` on the machine clock.
 * - `zaris_file_events`: the change log every watch tails, a commit's
 *   request id on its first row.
 * - `zaris_file_owners`: who is alive: one row per client id per adapter
 *   that registered it, with the process (pid and start time) it lives in.
 * - `zaris_file_parked`, `zaris_file_parked_keys`: commits waiting in line
 *   (capability `handover`, parked.ts), and the keys each checks.
 *
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3'
import { UnsupportedError } from '../../core/contract/errors'
import type { EventRow } from '../kit/rows'

/** The schema this code writes; a file of a newer one is refused. */
export const SCHEMA = 3

/** An entry row as the statements read it: the key still as bytes. */
export interface EntryRow {
  k: Buffer
  value: string
  revision: number
  created: number
  owner: string | null
  ttl: number | null
  expires: number | null
}

/** A namespace's row, with its revision (the row's floor or the last event's, the larger). */
export interface SpaceRow {
  revision: number
  reserved: number
  compacted: number
  clock: number
}

/** How stale the namespace row's clock reading may grow before a write brings it up to date, in ms (it tells a reboot where the system names no boot). */
export const CLOCK_EVERY_MS = 1000

/** A registration: client `owner`, registered by the adapter `nonce`, in process `pid` (started at `start`) of `host`. */
export interface OwnerRow {
  owner: string
  nonce: string
  pid: number
  start: string
  host: string
}

/** The key's UTF-16BE bytes: SQLite compares BLOBs bytewise, which is then UTF-16 code unit order. */
export function keyBytes(key: string): Buffer {
  return Buffer.from(key, 'utf16le').swap16()
}

/** The key whose {@link keyBytes} these are. */
export function keyOf(bytes: Buffer | Uint8Array): string {
  return Buffer.from(bytes).swap16().toString('utf16le')
}

/** The smallest byte string above every string that starts with `prefix`, or null when there is none. */
export function pastPrefix(prefix: Buffer): Buffer | null {
  // The prefix without its trailing 0xFF bytes, its last byte raised by one.
  let end = prefix.length
  while (end > 0 && prefix[end - 1] === 0xff) end--
  if (end === 0) return null
  const out = Buffer.from(prefix.subarray(0, end))
  out[end - 1]!++
  return out
}

/**
 * Creates the tables (in one transaction, so processes opening a new file
 * at once make them once), or checks that the file's are ours.
 */
export function migrate(db: BetterSqlite3.Database, file: string): void {
  db.transaction(() => {
    const tables = new Set((db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as Array<{ name: string }>).map((t) => t.name))
    if (tables.has('zaris_stores')) {
      throw new UnsupportedError(`${file} is the data file of a zaris node (zaris serve --data); a file:// store keeps a file of its own`)
    }
    if (tables.has('zaris_file_meta')) {
      const row = db.prepare(`SELECT value FROM zaris_file_meta WHERE name = 'schema'`).get() as { value: string } | undefined
      const version = Number(row?.value)
      if (version > SCHEMA) throw new UnsupportedError(`${file} was written by a newer zaris (file store schema ${version}; this one reads ${SCHEMA})`)
      // Schema 1 wrote the revision into the namespace's row at every commit: the same tables, read as a floor
      // now. Schema 2 had no parked commits: a process of it would release without handing over, so a file
      // marked 3 is one it no longer opens.
      if (version < SCHEMA) db.prepare(`UPDATE zaris_file_meta SET value = ? WHERE name = 'schema'`).run(String(SCHEMA))
      db.exec(PARKED_TABLES)
      // Files made before it was dropped have an index of owned entries (one page more in every commit that
      // takes or lets go of a hold). Dropped: both versions read the same rows, with or without it.
      db.exec('DROP INDEX IF EXISTS zaris_file_owned')
      return
    }
    db.exec(`
      CREATE TABLE zaris_file_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE zaris_file_spaces (
        ns TEXT PRIMARY KEY, revision INTEGER NOT NULL, reserved INTEGER NOT NULL,
        compacted INTEGER NOT NULL, clock REAL NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE zaris_file_entries (
        ns TEXT NOT NULL, k BLOB NOT NULL, value TEXT NOT NULL, revision INTEGER NOT NULL,
        created INTEGER NOT NULL, owner TEXT, ttl REAL, expires REAL,
        PRIMARY KEY (ns, k)
      ) WITHOUT ROWID;
      CREATE INDEX zaris_file_expiry ON zaris_file_entries (ns, expires) WHERE expires IS NOT NULL;
      CREATE TABLE zaris_file_events (
        ns TEXT NOT NULL, revision INTEGER NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, key TEXT NOT NULL,
        value TEXT, created INTEGER, owner TEXT, ttl REAL, request_id TEXT,
        PRIMARY KEY (ns, revision, seq)
      ) WITHOUT ROWID;
      CREATE UNIQUE INDEX zaris_file_requests ON zaris_file_events (ns, request_id) WHERE request_id IS NOT NULL;
      CREATE TABLE zaris_file_owners (
        ns TEXT NOT NULL, owner TEXT NOT NULL, nonce TEXT NOT NULL, pid INTEGER NOT NULL, start TEXT NOT NULL, host TEXT NOT NULL,
        PRIMARY KEY (ns, owner, nonce)
      ) WITHOUT ROWID;
      ${PARKED_TABLES}
    `)
    db.prepare(`INSERT INTO zaris_file_meta (name, value) VALUES ('schema', ?)`).run(String(SCHEMA))
  }).immediate()
}

/**
 * Parked commits (schema 3): each row's `plan` is its checks, ops and other
 * ways as JSON (parked.ts); `ends` is its deadline, then when it was
 * answered (rows are pruned some seconds after). AUTOINCREMENT: an id is
 * never given twice, so a waiter never reads another's answer.
 */
const PARKED_TABLES = `
  CREATE TABLE IF NOT EXISTS zaris_file_parked (
    id INTEGER PRIMARY KEY AUTOINCREMENT, ns TEXT NOT NULL, ord INTEGER, deadline REAL NOT NULL, ends REAL NOT NULL,
    plan TEXT NOT NULL, held TEXT NOT NULL, nonce TEXT NOT NULL, request_id TEXT, answer TEXT
  );
  CREATE INDEX IF NOT EXISTS zaris_file_parked_ends ON zaris_file_parked (ns, ends);
  CREATE INDEX IF NOT EXISTS zaris_file_parked_nonce ON zaris_file_parked (ns, nonce) WHERE answer IS NULL;
  CREATE INDEX IF NOT EXISTS zaris_file_parked_requests ON zaris_file_parked (ns, request_id) WHERE request_id IS NOT NULL;
  CREATE TABLE IF NOT EXISTS zaris_file_parked_keys (ns TEXT NOT NULL, k BLOB NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (ns, k, id)) WITHOUT ROWID;
`

/** A parked commit's row, as the store judges it. */
export interface ParkedRow {
  id: number
  /** The adapter that parked it (its registrations name its process). */
  nonce: string
  ord: number | null
  deadline: number
  plan: string
  held: string
}

/** A statement that takes `P` and answers rows of `R`. */
type Query<P extends unknown[], R = unknown> = BetterSqlite3.Statement<P, R>

const ENTRY = 'k, value, revision, created, owner, ttl, expires'
const EVENT = 'revision, type, key, value, created, owner, ttl'

/** The statements of one connection, prepared once. */
export interface Statements {
  space: Query<[string], SpaceRow>
  createSpace: Query<[string]>
  setSpace: Query<[number, number, number, number, string]>
  entry: Query<[string, Buffer], EntryRow>
  /** Live entries from `from` (inclusive) below `below` (exclusive; null: no bound) after `after` (exclusive). */
  page: Query<[{ ns: string; from: Buffer; below: Buffer | null; after: Buffer; now: number; limit: number }], EntryRow>
  due: Query<[string, number], EntryRow>
  nextExpiry: Query<[string], { at: number | null }>
  owned: Query<[string, string], EntryRow>
  put: Query<[string, Buffer, string, number, number, string | null, number | null, number | null]>
  del: Query<[string, Buffer]>
  event: Query<[string, number, number, string, string, string | null, number | null, string | null, number | null, string | null]>
  /** The next page of the log, after the event (`revision`, `seq`). */
  events: Query<[{ ns: string; revision: number; seq: number; limit: number }], EventRow & { seq: number }>
  commitEvents: Query<[string, number], EventRow>
  request: Query<[string, string], { revision: number }>
  prune: Query<[string, number]>
  owners: Query<[string], OwnerRow>
  ownersOf: Query<[string, string], OwnerRow>
  register: Query<[string, string, string, number, string, string]>
  unregister: Query<[string, string, string]>
  registrationsOf: Query<[string, string], { n: number }>
  dataVersion: Query<[], { data_version: number }>
  /** Unanswered parked commits that check key bytes `k`. */
  parkedAt: Query<[string, Buffer], ParkedRow>
  park: Query<[{ ns: string; ord: number | null; deadline: number; plan: string; held: string; nonce: string; request: string | null }]>
  parkKey: Query<[string, Buffer, number]>
  unparkKey: Query<[string, Buffer, number]>
  setHeld: Query<[string, number]>
  answerParked: Query<[string, number, number]>
  parkedRow: Query<[number], ParkedRow & { answer: string | null }>
  parkedRequest: Query<[string, string], { id: number; answer: string | null }>
  dropParked: Query<[number]>
  /** Parked rows whose time is over (deadline or answer) before the time given. */
  parkedOver: Query<[string, number], { id: number; plan: string }>
  parkedOf: Query<[string, string], { id: number; plan: string }>
  ownersOfNonce: Query<[string, string], OwnerRow>
}

export function prepare(db: BetterSqlite3.Database): Statements {
  return {
    space: db.prepare(
      `SELECT max(s.revision, coalesce((SELECT e.revision FROM zaris_file_events e WHERE e.ns = s.ns ORDER BY e.revision DESC, e.seq DESC LIMIT 1), 0)) AS revision,
         s.reserved AS reserved, s.compacted AS compacted, s.clock AS clock
       FROM zaris_file_spaces s WHERE s.ns = ?`,
    ),
    createSpace: db.prepare('INSERT OR IGNORE INTO zaris_file_spaces (ns, revision, reserved, compacted, clock) VALUES (?, 0, 0, 0, 0)'),
    setSpace: db.prepare('UPDATE zaris_file_spaces SET revision = ?, reserved = ?, compacted = ?, clock = max(clock, ?) WHERE ns = ?'),
    entry: db.prepare(`SELECT ${ENTRY} FROM zaris_file_entries WHERE ns = ? AND k = ?`),
    page: db.prepare(
      `SELECT ${ENTRY} FROM zaris_file_entries
       WHERE ns = @ns AND k >= @from AND (@below IS NULL OR k < @below) AND k > @after AND (expires IS NULL OR expires > @now)
       ORDER BY k LIMIT @limit`,
    ),
    due: db.prepare(`SELECT ${ENTRY} FROM zaris_file_entries WHERE ns = ? AND expires <= ? ORDER BY expires, k`),
    // (IS NOT NULL: so that SQLite reads the partial index of deadlines, not the namespace.)
    nextExpiry: db.prepare('SELECT min(expires) AS at FROM zaris_file_entries WHERE ns = ? AND expires IS NOT NULL'),
    // No index of owners (it cost a page in every commit that takes or lets go of a hold): the namespace is
    // scanned, only when a client's last registration ends (its process found dead, or its adapter closed):
    // about 1 ms per 10 000 entries of the namespace.
    owned: db.prepare(`SELECT ${ENTRY} FROM zaris_file_entries WHERE ns = ? AND owner = ? ORDER BY k`),
    put: db.prepare(
      `INSERT INTO zaris_file_entries (ns, k, value, revision, created, owner, ttl, expires) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (ns, k) DO UPDATE SET value = excluded.value, revision = excluded.revision, created = excluded.created,
         owner = excluded.owner, ttl = excluded.ttl, expires = excluded.expires`,
    ),
    del: db.prepare('DELETE FROM zaris_file_entries WHERE ns = ? AND k = ?'),
    event: db.prepare('INSERT INTO zaris_file_events (ns, revision, seq, type, key, value, created, owner, ttl, request_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    events: db.prepare(
      `SELECT ${EVENT}, seq FROM zaris_file_events WHERE ns = @ns AND (revision, seq) > (@revision, @seq) AND type <> 'none' ORDER BY revision, seq LIMIT @limit`,
    ),
    commitEvents: db.prepare(`SELECT ${EVENT} FROM zaris_file_events WHERE ns = ? AND revision = ? ORDER BY seq`),
    request: db.prepare('SELECT revision FROM zaris_file_events WHERE ns = ? AND request_id = ?'),
    prune: db.prepare('DELETE FROM zaris_file_events WHERE ns = ? AND revision <= ?'),
    owners: db.prepare('SELECT owner, nonce, pid, start, host FROM zaris_file_owners WHERE ns = ?'),
    ownersOf: db.prepare('SELECT owner, nonce, pid, start, host FROM zaris_file_owners WHERE ns = ? AND owner = ?'),
    register: db.prepare('INSERT OR IGNORE INTO zaris_file_owners (ns, owner, nonce, pid, start, host) VALUES (?, ?, ?, ?, ?, ?)'),
    unregister: db.prepare('DELETE FROM zaris_file_owners WHERE ns = ? AND owner = ? AND nonce = ?'),
    registrationsOf: db.prepare('SELECT count(*) AS n FROM zaris_file_owners WHERE ns = ? AND owner = ?'),
    dataVersion: db.prepare('PRAGMA data_version'),
    parkedAt: db.prepare(
      `SELECT p.id AS id, p.nonce AS nonce, p.ord AS ord, p.deadline AS deadline, p.plan AS plan, p.held AS held
       FROM zaris_file_parked_keys k JOIN zaris_file_parked p ON p.id = k.id WHERE k.ns = ? AND k.k = ? AND p.answer IS NULL`,
    ),
    park: db.prepare(
      `INSERT INTO zaris_file_parked (ns, ord, deadline, ends, plan, held, nonce, request_id) VALUES (@ns, @ord, @deadline, @deadline, @plan, @held, @nonce, @request)`,
    ),
    parkKey: db.prepare('INSERT OR IGNORE INTO zaris_file_parked_keys (ns, k, id) VALUES (?, ?, ?)'),
    unparkKey: db.prepare('DELETE FROM zaris_file_parked_keys WHERE ns = ? AND k = ? AND id = ?'),
    setHeld: db.prepare('UPDATE zaris_file_parked SET held = ? WHERE id = ?'),
    answerParked: db.prepare('UPDATE zaris_file_parked SET answer = ?, ends = ? WHERE id = ?'),
    parkedRow: db.prepare('SELECT id, nonce, ord, deadline, plan, held, answer FROM zaris_file_parked WHERE id = ?'),
    ownersOfNonce: db.prepare('SELECT owner, nonce, pid, start, host FROM zaris_file_owners WHERE ns = ? AND nonce = ?'),
    parkedRequest: db.prepare('SELECT id, answer FROM zaris_file_parked WHERE ns = ? AND request_id = ?'),
    dropParked: db.prepare('DELETE FROM zaris_file_parked WHERE id = ?'),
    parkedOver: db.prepare('SELECT id, plan FROM zaris_file_parked WHERE ns = ? AND ends < ?'),
    parkedOf: db.prepare('SELECT id, plan FROM zaris_file_parked WHERE ns = ? AND nonce = ? AND answer IS NULL'),
  }
}
