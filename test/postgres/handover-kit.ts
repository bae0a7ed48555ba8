/**
 * What the Postgres handover tests share: ops and checks spelled short, the
 * parked options, adapters of a fresh namespace each on a pool of its own
 * (as processes are), and the namespace's count of parked rows.
 */
import { expect } from 'vitest'
import type { Check, CommitResult, Op } from 'zaris'
import { postgresAdapter, type PostgresAdapter } from 'zaris/postgres'
import type { TestPostgres } from './use-postgres'

export const set = (key: string, owner: string, ttl = 60_000): Op => ({ type: 'set', key, value: null, owner, ttl })
export const del = (key: string): Op => ({ type: 'delete', key })
export const absent = (key: string): Check => ({ key, revision: null })
export const life = (key: string, created: number): Check => ({ key, created })
export const ok = (r: CommitResult) => r as Extract<CommitResult, { ok: true }>
export const park = (ms = 10_000, order?: number) => ({ waitChange: ms, keepParked: true, parkOrder: order })

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
