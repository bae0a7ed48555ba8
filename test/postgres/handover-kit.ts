/**
 * What the Postgres handover tests share: ops and checks spelled short, the
 * parked options, adapters of a fresh namespace each on a pool of its own
 * (as processes are), and the namespace's count of parked rows.
 */
import { expect } from 'vitest'
import { postgresAdapter, type PostgresAdapter } from 'zaris/postgres'
import type { TestPostgres } from './use-postgres'

export { absent, del, life, ok, park, set } from '../commit-terms'

/** `count` adapters of a fresh namespace, each on a pool of its own, closed when the `await using` block ends. */
export async function adapters(db: TestPostgres, count: number, url = (ns: string) => db.server.url(ns)) {
  const ns = db.ns()
  const all = await Promise.all(Array.from({ length: count }, (_, i) => postgresAdapter({ url: url(ns), pg: { application_name: `a${i}` } })))
  return { ns, all: all as PostgresAdapter[], [Symbol.asyncDispose]: () => Promise.all(all.map((a) => a.close())).then(() => {}) }
}

/** The parked rows of namespace `ns`, checked against the count the lock-shaped statements trust. */
export async function parkedRows(db: TestPostgres, ns: string): Promise<number> {
  const r = await db.admin.query('SELECT count(*)::int AS n, (SELECT parked FROM zaris.stores WHERE ns = $1) AS counted FROM zaris.parked WHERE ns = $1', [ns])
  expect(r.rows[0].counted ?? 0).toBe(r.rows[0].n)
  return r.rows[0].n as number
}
