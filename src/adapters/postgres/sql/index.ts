/**
 * The SQL of a zaris store in Postgres, for one schema: what the adapter
 * runs on first use (unless told not to), and what a database owner runs
 * ahead of time when applications may not run DDL ({@link schemaSql}).
 *
 * @module
 */
import { InvalidArgumentError, UnauthorizedError, UnavailableError, UnsupportedError } from '../../../core/contract/errors'
import { describe } from '../../../core/contract/validate'
import { sqlState, type PgQueryable } from '../load'
import { COMMIT, COMMIT1 } from './commit'
import { PARK_FUNCTIONS, PARK_TABLES } from './park'
import { HOUSEKEEPING, SCHEMA_VERSION, TABLES } from './tables'

export { SCHEMA_VERSION } from './tables'

/** Schema names zaris accepts: plain lower-case identifiers, so they never need quoting. */
const SCHEMA = /^[a-z_][a-z0-9_]{0,39}$/

/** The default schema. */
export const DEFAULT_SCHEMA = 'zaris'

/** Checks a schema name; throws `InvalidArgumentError` naming the rule. */
export function checkSchema(schema: unknown): string {
  if (typeof schema !== 'string' || !SCHEMA.test(schema)) {
    throw new InvalidArgumentError(`schema must be 1-40 lower-case letters, digits or _ (not starting with a digit), got ${describe(schema)}`)
  }
  return schema
}

/** The channel NOTIFY wakes watchers on: one per schema, the payload names the namespace. */
export function channelOf(schema: string): string {
  return `zaris:${schema}`
}

/**
 * Every statement that creates (or brings up to date) the zaris tables and
 * functions in `schema`, as one script: run it with `psql`, or from a
 * migration tool, as a role that may create them; then give the
 * application's role `USAGE` on the schema, `SELECT, INSERT, UPDATE, DELETE`
 * on its tables, `USAGE` on its sequence and `EXECUTE` on its functions,
 * and open the adapter with `createSchema: false`. Running it again is
 * harmless.
 *
 * @example
 * import { schemaSql } from 'zaris/postgres'
 * process.stdout.write(schemaSql('zaris')) // node -e "…" | psql "$DATABASE_URL"
 */
export function schemaSql(schema: string = DEFAULT_SCHEMA): string {
  checkSchema(schema)
  const body = [TABLES, PARK_TABLES, HOUSEKEEPING, PARK_FUNCTIONS, COMMIT, COMMIT1, `DELETE FROM @S.meta;\nINSERT INTO @S.meta (version) VALUES (${SCHEMA_VERSION});\n`].join('\n')
  return `-- zaris store, schema version ${SCHEMA_VERSION}\n${body.replaceAll('@S', schema)}`
}

/**
 * Makes sure `schema` holds this version's tables: reads the version, and
 * when they are missing or older, creates them (one transaction, under a
 * transaction-level advisory lock, so processes starting together do it
 * once) — or, with `create` false, says how to. A store made by a newer
 * zaris is refused. `db` fails with zaris errors (the connection's `query`).
 */
export async function ensureSchema(db: PgQueryable, schema: string, create: boolean): Promise<void> {
  let version: number | undefined
  try {
    const r = await db.query(`SELECT max(version) AS v FROM ${schema}.meta`)
    // max() answers one row, null over an empty table.
    version = (r.rows[0] as { v: number | null }).v ?? undefined
  } catch (err) {
    const state = sqlState(err)
    if (state === '42501') throw new UnauthorizedError(`Postgres refused to let this role read the zaris tables in schema ${schema}: ${(err as Error).message}; ${howTo(schema)}`)
    // 42P01 also when the schema itself is missing (Postgres names the relation).
    if (state !== '42P01') throw err
  }
  if (version === SCHEMA_VERSION) return
  if (version !== undefined && version > SCHEMA_VERSION) {
    throw new UnsupportedError(`the zaris tables in schema ${schema} were made by a newer zaris (schema version ${version}; this one knows ${SCHEMA_VERSION})`)
  }
  if (!create) {
    throw new UnavailableError(
      `the zaris tables in schema ${schema} are ${version === undefined ? 'missing' : `at version ${version}, older than ${SCHEMA_VERSION}`}: ${howTo(schema)}, or let the adapter create them (createSchema: true)`,
    )
  }
  // One simple-protocol message: Postgres runs its statements as one transaction. A schema name
  // holds no quote (checkSchema). Under the lock the version is read again: a process that waited
  // for another's setup must not run the script again, whose DDL takes locks that the first one's
  // commits, under way by then, hold in another order (a deadlock, seen with 3 workers starting at once).
  const script = `SELECT pg_advisory_xact_lock(hashtext('zaris schema ${schema}'));\n${doneAlready(schema)}\n${schemaSql(schema)}`
  try {
    await db.query(script)
  } catch (err) {
    if (sqlState(err) === DONE_ALREADY) return
    if (sqlState(err) === '42501') throw new UnauthorizedError(`Postgres refused to let this role create the zaris tables in schema ${schema}: ${(err as Error).message}; ${howTo(schema)}, and open the adapter with createSchema: false`)
    throw err
  }
}

/** The state {@link doneAlready} ends the setup's transaction with: the tables are this version's. */
const DONE_ALREADY = 'ZR001'

/** A statement that ends the setup's transaction when `schema` already holds this version's tables. */
function doneAlready(schema: string): string {
  return `DO $zaris$ DECLARE v integer; BEGIN
  IF to_regclass('${schema}.meta') IS NOT NULL THEN
    EXECUTE 'SELECT max(version) FROM ${schema}.meta' INTO v;
    IF v = ${SCHEMA_VERSION} THEN RAISE EXCEPTION 'zaris schema already set up' USING ERRCODE = '${DONE_ALREADY}'; END IF;
  END IF;
END $zaris$;`
}

function howTo(schema: string): string {
  return `run the SQL of schemaSql(${JSON.stringify(schema)}) from 'zaris/postgres' as a role that may create them, and grant this role USAGE on the schema, SELECT, INSERT, UPDATE and DELETE on its tables, USAGE on its sequence and EXECUTE on its functions`
}
