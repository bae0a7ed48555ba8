/**
 * The lock-shaped commits, each one statement: a take (the check "no entry"
 * and a set of that key) and a release (the check "created is the token"
 * and a delete of that key), the two commits every acquire + release makes.
 *
 * Why: `commit1` is a PL/pgSQL call of a dozen statements and expressions,
 * and Postgres starts each of them anew in every transaction; a profile of
 * the backend (bench/tools/postgres-profile.ts) put its CPU at ~215 µs per
 * take + release, the row-insert lock's at ~25. Here each is one
 * data-modifying statement — lock the namespace's row and take a revision,
 * write the entry, write its log row, NOTIFY when watched — sent as a named
 * prepared statement, so Postgres plans it once per connection.
 *
 * Each does its work only in the common case (take: no row holds the key,
 * live or expired; release: the entry is there with the token, live, and no
 * fence holds it; and no commit is parked in the namespace) and otherwise writes nothing — or, when a row appeared
 * after the statement's snapshot, only the namespace's revision (a skipped
 * revision, as between namespaces) — and answers "not done": the caller
 * then runs the commit through `commit1`, which expires, checks, refuses a
 * fenced key and answers. The namespace's row is locked before the revision
 * is taken, as in `commit1`, so revisions become visible in commit order.
 *
 * Behind a transaction pooler a named statement may meet a server
 * connection that does not have it (SQLSTATE 26000) or already has it
 * (42P05); both fail before anything runs, and the connection then stops
 * using them: every commit goes through `commit1`, as before.
 *
 * @module
 */
import type { Check, Op } from '../../core/contract/adapter'
import { keyBytes, utf8 } from './codec'
import type { Connection } from './connection'
import { sqlState } from './load'

/** Which lock-shaped statement runs a commit, if one does. */
export type LockShape = 'take' | 'release'

/**
 * The shape of a commit: a take or a release of one key, or undefined for
 * any other (those go through `commit1`).
 */
export function lockShape(checks: Check[], ops: Op[]): LockShape | undefined {
  if (ops.length !== 1 || checks.length !== 1) return undefined
  const c = checks[0]!
  const op = ops[0]!
  if (c.key !== op.key) return undefined
  if (op.type === 'set' && 'revision' in c && c.revision === null) return 'take'
  if (op.type === 'delete' && 'created' in c && c.created !== null) return 'release'
  return undefined
}

/**
 * Locks the namespace's row and takes a revision when `cond` holds (in the
 * statement's snapshot) and nothing is parked in the namespace (a change
 * must then be handed over: `commit1` does it); the clock is read after the lock.
 */
const store = (schema: string, cond: string) => `s AS (
    UPDATE ${schema}.stores SET revision = nextval('${schema}.revisions'), logged = logged + 1 WHERE ns = $1::text AND parked = 0 AND ${cond}
      RETURNING revision, clock_timestamp() AS now, logged, pruned_at, watched
  )`

/**
 * What both statements answer (one row, also when nothing was done): the
 * revision, the clock (ms), whether the log is due a pruning, a NOTIFY when
 * watched, and whether commits are parked in the namespace (as the
 * statement's snapshot saw it: the caller then skips these statements for a while).
 */
const answer = (schema: string, done: string) => `SELECT s.revision, extract(epoch FROM s.now) * 1000 AS now, coalesce(${done}, false) AS done, q.parked > 0 AS parked,
    s.logged > $6::integer + greatest(100, $6::integer / 10) OR s.now > s.pruned_at + $5::integer * interval '100 microseconds' AS prune,
    (SELECT pg_notify('zaris:${schema}', $1::text) WHERE s.watched > s.now) AS notified`

/** The namespace's count of parked commits, as one row `q` (none: null). */
const lined = (schema: string) => `(SELECT (SELECT parked FROM ${schema}.stores WHERE ns = $1::text) AS parked) q`

/** $1 ns, $2 request id, $3 key, $4 value, $5 retention, $6 history, $7 ttl, $8 owner. */
function takeSql(schema: string): string {
  return `WITH ${store(schema, `NOT EXISTS (SELECT 1 FROM ${schema}.entries WHERE ns = $1::text AND k = $3::bytea)`)}, w AS (
    INSERT INTO ${schema}.entries (ns, k, value, revision, created, owner, ttl, expires_at)
      SELECT $1::text, $3::bytea, $4::text, s.revision, s.revision, $8::bytea, $7::double precision, s.now + $7::double precision * interval '1 millisecond' FROM s
      ON CONFLICT (ns, k) DO NOTHING RETURNING revision, expires_at
  ), l AS (
    INSERT INTO ${schema}.events (ns, revision, seq, type, k, value, created, owner, ttl, deadline, req)
      SELECT $1::text, w.revision, 0, 'p', $3::bytea, $4::text, w.revision, $8::bytea, $7::double precision, w.expires_at, $2::bigint FROM w
  )
  ${answer(schema, 'w.revision IS NOT NULL')} FROM ${lined(schema)} LEFT JOIN s ON true LEFT JOIN w ON true`
}

/** $1 ns, $2 request id, $3 key, $4 token, $5 retention, $6 history. */
function releaseSql(schema: string): string {
  const live = (e: string, now: string) => `${e}.ns = $1::text AND ${e}.k = $3::bytea AND ${e}.created = $4::bigint AND (${e}.expires_at IS NULL OR ${e}.expires_at > ${now})`
  return `WITH ${store(schema, `EXISTS (SELECT 1 FROM ${schema}.entries e WHERE ${live('e', 'clock_timestamp()')})`)}, d AS (
    -- Not a row a fence holds (a delete would wait for its transaction): commit1 refuses that one.
    DELETE FROM ${schema}.entries e USING s WHERE ${live('e', 's.now')}
      AND EXISTS (SELECT 1 FROM ${schema}.entries f WHERE f.ns = $1::text AND f.k = $3::bytea FOR UPDATE SKIP LOCKED) RETURNING e.k, s.revision
  ), l AS (
    INSERT INTO ${schema}.events (ns, revision, seq, type, k, req) SELECT $1::text, d.revision, 0, 'd', d.k, $2::bigint FROM d
  )
  ${answer(schema, 's.revision IS NOT NULL AND EXISTS (SELECT 1 FROM d)')} FROM ${lined(schema)} LEFT JOIN s ON true`
}

/** The text of a shape's statement in a schema (bench/tools/postgres-parts.ts runs variants of it). */
export function lockSql(shape: LockShape, schema: string): string {
  return shape === 'take' ? takeSql(schema) : releaseSql(schema)
}

const texts = new Map<string, { name: string; text: string }>()

/**
 * The named statement of a shape in a schema. Its name carries a hash of its
 * text, so that, behind a pooler shared with another zaris version, one name
 * never stands for two texts.
 */
function statement(shape: LockShape, schema: string): { name: string; text: string } {
  const id = `${shape}\u0000${schema}`
  let s = texts.get(id)
  if (!s) {
    const text = lockSql(shape, schema)
    texts.set(id, (s = { name: `zaris_${shape}_${fnv(text)}`, text }))
  }
  return s
}

/** FNV-1a of a text, as 8 hex digits. */
function fnv(text: string): string {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return (h >>> 0).toString(16).padStart(8, '0')
}

/** The answer of a lock-shaped statement: done (with the revision and the clock), or not done (run `commit1`). */
export type LockAnswer = { done: true; revision: number; now: number; prune: boolean } | { done: false; parked: boolean }

/** What a lock-shaped statement needs besides the commit. */
export interface LockCall {
  connection: Connection
  schema: string
  namespace: string
  mine: string
  retention: number
  history: number
  callTimeout: number
}

/**
 * Runs a take or a release as its statement. Answers `undefined` when the
 * connection does not keep named statements (a transaction pooler: it
 * learns that here, once, from a failure that ran nothing).
 */
export async function runLockShape(shape: LockShape, call: LockCall, checks: Check[], ops: Op[], value: string | null): Promise<LockAnswer | undefined> {
  const { connection, schema, namespace, mine, retention, history, callTimeout } = call
  if (!connection.named) return undefined
  const op = ops[0]!
  const head = [namespace, mine, keyBytes(op.key)]
  const args =
    shape === 'take'
      ? [...head, value, retention, history, op.type === 'set' ? (op.ttl ?? null) : null, op.type === 'set' && op.owner !== undefined ? utf8(op.owner) : null]
      : [...head, (checks[0] as { created: number }).created, retention, history]
  type Row = { revision: string; now: string | number; done: boolean; prune: boolean; parked: boolean | null }
  let rows: Row[]
  try {
    rows = (await connection.query<Row>('commit', statement(shape, schema), args, callTimeout)).rows
  } catch (err) {
    const state = sqlState(err)
    // A pooler's server connection lacks the statement, or has it from another client: nothing ran.
    if (state === '26000' || state === '42P05') {
      connection.named = false
      return undefined
    }
    throw err
  }
  const row = rows[0]
  if (row === undefined || !row.done) return { done: false, parked: row?.parked === true }
  return { done: true, revision: Number(row.revision), now: Number(row.now), prune: row.prune }
}
