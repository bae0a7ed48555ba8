/**
 * The Postgres adapter against the locks people take in Postgres, on one
 * Postgres of the bench's own (fsync on, as shipped; its data in memory
 * where there is room, as the tests' is: test/setup/store-dir.ts):
 *
 * - `pg_try_advisory_lock` + `pg_advisory_unlock`, two round trips on a
 *   connection of its own (the advisory-lock packages' recipe). It gives no
 *   TTL (a hung holder keeps the lock until its connection dies), no token
 *   to fence writes with, and no safety behind a transaction pooler (the
 *   lock belongs to whichever session ran it).
 * - a row-insert lock (Laravel's database lock, Verrou's "Laravel
 *   strategy"): INSERT the key with an owner and an expiry, or UPDATE it if
 *   the holder's expiry passed; DELETE by owner to release. A TTL and an
 *   owner, no fencing token, expiry judged by the client's clock.
 * - 16 contending clients: each peer polls (retrying every 10 ms + jitter);
 *   the blocking `pg_advisory_lock` too, which queues in Postgres's lock manager.
 *
 * @module
 */
import pg from 'pg'
import { postgresAdapter } from 'zaris/postgres'
import { alternate } from '../lib/compare'
import { contention, oneClient, zarisPeer, type LockPeer } from '../lib/locks'
import { sleep } from '../lib/measure'
import type { Scenario } from '../lib/report'
import { postgres as startPostgres } from '../lib/procs'
import type { BenchContext } from './context'
import { CLIENTS, RETRY, contentionScenario } from './remote'

const TITLE = 'Postgres adapter, one client'
const OP = 'acquire + release of an uncontended lock on a local Postgres (zaris: a take and a release, one statement each, TTL 30 s, token)'

export async function postgresScenarios(ctx: BenchContext): Promise<Scenario[]> {
  let server: Awaited<ReturnType<typeof startPostgres>>
  try {
    server = await startPostgres()
  } catch (err) {
    const why = `Postgres could not be started (${(err as Error).message.split('\n')[0]}); install Debian's postgresql or set ZARIS_POSTGRES_BIN`
    ctx.log(`postgres: ${why}`)
    return [{ id: 'postgres-1', title: TITLE, op: OP, metric: 'ops', rows: [], skipped: why }]
  }
  const clients: pg.Client[] = []
  const peers: LockPeer[] = []
  const conn = async () => {
    const c = new pg.Client({ connectionString: server.url() })
    await c.connect()
    clients.push(c)
    return c
  }
  const make = (p: LockPeer) => (peers.push(p), p)
  try {
    await (await conn()).query('CREATE TABLE cache_locks (key text PRIMARY KEY, owner text NOT NULL, expiration bigint NOT NULL)')
    // A pool as large as the peers' connections together, so the pool is not what zaris waits on.
    const zaris = async () => make(zarisPeer(await postgresAdapter({ url: server.url('bench'), pg: { max: CLIENTS + 4 } })))
    const dur = ctx.quick ? 250 : 600
    ctx.log('postgres: one client')
    const z1 = await zaris()
    const advisory = make(advisoryPeer(await conn(), RETRY))
    const rows = make(rowLockPeer(await conn(), RETRY))
    // A store that has lived a minute: autovacuum has run over the churned tables once, and the
    // prepared statements are planned again on their vacuumed size (the plans a long-lived store runs).
    for (const [peer, key] of [[z1, 'lock:one'], [rows, 'lock:one:row']] as const) await oneClient(peer, key, 150)
    await (await conn()).query('VACUUM zaris.entries, zaris.stores, cache_locks')
    const single = await alternate(
      [
        { label: 'zaris postgres adapter', zaris: true, trial: () => oneClient(z1, 'lock:one', dur) },
        { label: 'pg_try_advisory_lock + unlock', zaris: false, trial: () => oneClient(advisory, 'lock:one:advisory', dur) },
        { label: 'row-insert lock (Laravel strategy)', zaris: false, trial: () => oneClient(rows, 'lock:one:row', dur) },
      ],
      ctx.trials,
    )
    ctx.log(`postgres: ${CLIENTS} clients`)
    const zs = await Promise.all(Array.from({ length: CLIENTS }, zaris))
    const polls = await Promise.all(Array.from({ length: CLIENTS }, async () => make(advisoryPeer(await conn(), RETRY))))
    const blocking = await Promise.all(Array.from({ length: CLIENTS }, async () => make(advisoryPeer(await conn(), RETRY, true))))
    const rowPolls = await Promise.all(Array.from({ length: CLIENTS }, async () => make(rowLockPeer(await conn(), RETRY))))
    const cdur = ctx.quick ? 400 : 800
    const many = await alternate(
      [
        { label: 'zaris postgres adapter, wait', zaris: true, trial: (i) => contention(zs, `lock:many:${i}`, cdur) },
        { label: 'pg_try_advisory_lock polling', zaris: false, trial: (i) => contention(polls, `lock:many:advisory:${i}`, cdur) },
        { label: 'pg_advisory_lock (blocking)', zaris: false, trial: (i) => contention(blocking, `lock:many:blocking:${i}`, cdur) },
        { label: 'row-insert lock polling', zaris: false, trial: (i) => contention(rowPolls, `lock:many:row:${i}`, cdur) },
      ],
      ctx.trials,
    )
    const caveat =
      'pg_try_advisory_lock / pg_advisory_lock: no TTL (a hung holder keeps the lock until its session ends), no fencing token, and the lock is the session\'s, so behind PgBouncer in transaction mode it lands on whichever server connection ran it. The row-insert lock: a TTL judged by the client\'s clock and an owner, no fencing token. zaris: TTL on Postgres\'s clock, a fencing token that fence(tx, lock) checks in the application\'s own transaction, one transaction per call (PgBouncer-safe), and a watch log.'
    return [
      { id: 'postgres-1', title: TITLE, op: OP, metric: 'ops', rows: single, notes: [caveat] },
      { ...contentionScenario('postgres-16', `Postgres adapter, ${CLIENTS} contending clients`, many), notes: [caveat] },
    ]
  } finally {
    await Promise.allSettled(peers.map((p) => p.close()))
    await Promise.allSettled(clients.map((c) => c.end()))
    await server.dispose()
  }
}

/** A stable 64-bit advisory lock key for a lock name (as the advisory-lock packages hash names). */
function advisoryKey(name: string): bigint {
  let h = 1469598103934665603n
  for (const ch of Buffer.from(name)) h = BigInt.asIntN(64, (h ^ BigInt(ch)) * 1099511628211n)
  return h
}

/** Session advisory locks on a connection of its own: try (polling) or block, then unlock. */
function advisoryPeer(db: pg.Client, retry: { delay: number; jitter: number }, block = false): LockPeer {
  let attempts = 0
  return {
    async acquire(key, waitMs) {
      const k = advisoryKey(key).toString()
      const release = async () => {
        await db.query('SELECT pg_advisory_unlock($1)', [k])
      }
      if (block && waitMs > 0) {
        attempts++
        // Blocks in Postgres's lock manager (its own queue); the wait is bounded by the trial's end.
        await db.query(`SET lock_timeout = ${Math.max(1, Math.ceil(waitMs))}`)
        try {
          await db.query('SELECT pg_advisory_lock($1)', [k])
          return release
        } catch {
          return null
        }
      }
      const until = performance.now() + waitMs
      for (;;) {
        attempts++
        if ((await db.query('SELECT pg_try_advisory_lock($1) AS ok', [k])).rows[0].ok) return release
        const left = until - performance.now()
        if (left <= 0) return null
        await sleep(Math.min(left, retry.delay + Math.random() * retry.jitter))
      }
    },
    attempts: async () => attempts,
    close: async () => {},
  }
}

/**
 * Laravel's database lock: INSERT the key with owner and expiry; on a
 * duplicate, UPDATE it if it expired (or is ours); release deletes it by owner.
 */
function rowLockPeer(db: pg.Client, retry: { delay: number; jitter: number }): LockPeer {
  let attempts = 0
  let n = 0
  const tryOnce = async (key: string, owner: string) => {
    const expiration = Date.now() + 30_000
    try {
      await db.query('INSERT INTO cache_locks (key, owner, expiration) VALUES ($1, $2, $3)', [key, owner, expiration])
      return true
    } catch (err) {
      if ((err as { code?: string }).code !== '23505') throw err
      const r = await db.query('UPDATE cache_locks SET owner = $1, expiration = $2 WHERE key = $3 AND (owner = $1 OR expiration <= $4)', [owner, expiration, key, Date.now()])
      return (r.rowCount ?? 0) > 0
    }
  }
  return {
    async acquire(key, waitMs) {
      const owner = `${process.pid}:${++n}:${Math.random()}`
      const until = performance.now() + waitMs
      for (;;) {
        attempts++
        if (await tryOnce(key, owner)) return async () => db.query('DELETE FROM cache_locks WHERE key = $1 AND owner = $2', [key, owner])
        const left = until - performance.now()
        if (left <= 0) return null
        await sleep(Math.min(left, retry.delay + Math.random() * retry.jitter))
      }
    },
    attempts: async () => attempts,
    close: async () => {},
  }
}
