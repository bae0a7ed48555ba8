/**
 * The Postgres adapter through a real PgBouncer in transaction mode, where
 * a session is not the client's: every call is one transaction, so locks,
 * watches and fences work unchanged, and the adapter finds out that LISTEN
 * reaches nobody there and polls instead. (The whole conformance suite runs
 * through PgBouncer in test/long/postgres-conformance.test.ts, the model's
 * histories in test/model/postgres.test.ts.)
 */
import pg from 'pg'
import { expect, test } from 'vitest'
import { Client, type WatchEvent } from 'zaris'
import { fence, postgresAdapter } from 'zaris/postgres'
import { until } from '../conformance/util'
import { postgresWithBouncer } from './with-bouncer'

// Two server connections for every client of a database: no client keeps a session.
const { server, bouncer } = postgresWithBouncer({ poolSize: 2 })

test('through PgBouncer: NOTIFY found not to arrive, watches poll and miss nothing; directly, NOTIFY wakes them', async () => {
  for (const [url, listens] of [[bouncer().url('notify'), false], [server().url('notify'), true]] as const) {
    const watcher = await postgresAdapter({ url, pollInterval: 50 })
    const writer = await postgresAdapter({ url })
    try {
      const seen: WatchEvent[] = []
      await watcher.watch('w/', { event: (e) => seen.push(e), error() {} })
      const revisions: number[] = []
      for (let i = 0; i < 10; i++) {
        const r = await writer.commit([], [{ type: 'set', key: `w/${i}`, value: i }])
        if (r.ok) revisions.push(r.revision)
      }
      await until(() => seen.length === 10)
      expect(seen.map((e) => e.revision)).toEqual(revisions)
      // The probe notification has had its second to come back (or not).
      await new Promise((r) => setTimeout(r, 1_200))
      expect(watcher.listening, url).toBe(listens)
    } finally {
      await watcher.close()
      await writer.close()
    }
  }
})

test('through PgBouncer with two server connections: 8 clients hand one lock round, each fencing its own transaction', async () => {
  const clients = await Promise.all(Array.from({ length: 8 }, async (_, i) => new Client(await postgresAdapter({ url: bouncer().url('handover'), pollInterval: 20 }), { id: `c${i}` })))
  const db = new pg.Pool({ connectionString: bouncer().url(), max: 8 })
  await db.query('CREATE TABLE IF NOT EXISTS turns (token bigint PRIMARY KEY, client text NOT NULL)')
  let inside = 0
  try {
    await Promise.all(clients.map(async (c, i) => {
      for (let round = 0; round < 3; round++) {
        const lock = (await c.locks.acquire('lock:turn', { ttl: 10_000, wait: 30_000 }))!
        expect(++inside).toBe(1)
        const tx = await db.connect()
        try {
          await tx.query('BEGIN')
          await fence(tx, lock)
          await tx.query('INSERT INTO turns VALUES ($1, $2)', [lock.token, `c${i}`])
          await tx.query('COMMIT')
        } finally {
          tx.release()
        }
        inside--
        expect(await lock.release()).toBe(true)
      }
    }))
    const turns = (await db.query('SELECT token FROM turns ORDER BY token')).rows.map((r) => Number(r.token))
    expect(turns).toHaveLength(24)
    expect(new Set(turns).size).toBe(24)
  } finally {
    await Promise.all(clients.map((c) => c.close()))
    await db.end()
  }
})

test("through PgBouncer: a lock's take and release, sent as named statements that the pooler does not keep, fall back and are all answered once", async () => {
  const adapters = await Promise.all([0, 1].map(() => postgresAdapter({ url: bouncer().url('named'), pg: { max: 3 } })))
  try {
    const tokens: number[] = []
    await Promise.all(adapters.map(async (a, i) => {
      for (let round = 0; round < 15; round++) {
        const key = `lock:${i}:${round % 2}`
        const taken = await a.commit([{ key, revision: null }], [{ type: 'set', key, value: round, owner: `o${i}` }])
        expect(taken.ok).toBe(true)
        if (!taken.ok) return
        tokens.push(taken.revision)
        expect(await a.commit([{ key, created: taken.revision }], [{ type: 'delete', key }])).toMatchObject({ ok: true, deleted: [key] })
      }
    }))
    expect(new Set(tokens).size).toBe(30)
    expect(await adapters[0]!.list('lock:')).toMatchObject({ entries: [] })
  } finally {
    await Promise.all(adapters.map((a) => a.close()))
  }
})
