/**
 * The conformance suite's store hooks for Postgres (see StoreFixture in
 * test/conformance/fixture.ts), shared by the direct and PgBouncer runs:
 *
 * - restart: `kill -9` of the whole server and a start on the same port and
 *   data. Postgres is durable, so the `seen` rule holds because the revision
 *   sequence survives the crash (nothing is handed out twice), not because
 *   the adapter sends `seen`.
 * - setRevision: `setval` of the schema's revision sequence. The sequence is
 *   shared by every namespace of the schema, so `cleanup` drops that test's
 *   namespace and puts the sequence back where it was (the suite's tests of
 *   a file run one at a time; no other namespace took a revision meanwhile).
 * - historyKept: the adapters keep 300 events a namespace (`historySize`):
 *   more than the suite's 240 racing commits, and compaction is reached
 *   in ~450 commits.
 * - unreachable: an adapter on a closed port, trying for one second.
 */
import pg from 'pg'
import { postgresAdapter } from 'zaris/postgres'
import type { AdapterFixtureOptions } from '../conformance'
import type { PostgresServer } from './server'
import { freePort } from './server'

/** Events of history every adapter of the suite keeps (enough for its racing commits, few enough to reach compaction quickly). */
export const HISTORY_KEPT = 300

/** The hooks on `server()` (started by the file), whose adapters keep `historyKept` events; `restart` only where the file owns the server. */
export function postgresHooks(server: () => PostgresServer, historyKept = HISTORY_KEPT): AdapterFixtureOptions {
  const moved = new Map<string, string>()
  const sql = async (text: string, values: unknown[] = []): Promise<pg.QueryResult> => {
    const c = new pg.Client({ connectionString: server().url() })
    await c.connect()
    try {
      return await c.query(text, values)
    } finally {
      await c.end()
    }
  }
  const hooks: AdapterFixtureOptions = {
    historyKept,
    async setRevision(namespace, revision) {
      const before = await sql(`SELECT last_value::text AS v FROM zaris.revisions`)
      if (!moved.has(namespace)) moved.set(namespace, before.rows[0].v as string)
      await sql(`SELECT setval('zaris.revisions', $1::bigint)`, [String(revision)])
    },
    async cleanup(namespace) {
      const back = moved.get(namespace)
      if (back === undefined) return
      moved.delete(namespace)
      // Its rows go first: their revisions and tokens (`UNIQUE (k, created)` is schema-wide) will be handed out again.
      for (const table of ['entries', 'events', 'requests', 'stores']) await sql(`DELETE FROM zaris.${table} WHERE ns = $1`, [namespace])
      await sql(`SELECT setval('zaris.revisions', $1::bigint)`, [back])
    },
    unreachable: async () => postgresAdapter({ url: `postgres://zaris@127.0.0.1:${await freePort()}/postgres?ns=nowhere`, timeout: 1_000, callTimeout: 500 }),
  }
  // A server shared by the mutation runs (ZARIS_POSTGRES_SHARED) is not this file's to kill.
  if (process.env.ZARIS_POSTGRES_SHARED === undefined) {
    hooks.restart = async () => {
      await server().kill()
      await server().start()
    }
  }
  return hooks
}
