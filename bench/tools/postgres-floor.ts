/**
 * The floor under issue 33's one-client target (zaris ≥ 1.0x
 * `pg_try_advisory_lock` + unlock): the cheapest locks a table can hold,
 * beside the advisory lock, each pair as two named statements on one plain
 * node-postgres connection (no adapter, no pool): wall time per pair, p50
 * over the pairs, the variants in turns.
 *
 * - advisory: `pg_try_advisory_lock` + `pg_advisory_unlock` (no write at all);
 * - two `SELECT 1`: the round trips alone, the floor of any two-statement pair;
 * - row-update lock: one row per key made ahead, taken and freed by an
 *   `UPDATE` each (HOT: no index touched), the least a table lock can write;
 * - row-insert lock: `INSERT` + `DELETE` (the bench's peer);
 * - zaris's lock-shaped statements (src/adapters/postgres/lock-path.ts).
 *
 * `npx tsx bench/tools/postgres-floor.ts [pairs] [rounds]`
 */
import pg from 'pg'
import { postgresAdapter } from 'zaris/postgres'
import { lockSql } from '../../src/adapters/postgres/lock-path'
import { PostgresServer } from '../../test/postgres/server'

const N = Number(process.argv[2] ?? 3000)
const ROUNDS = Number(process.argv[3] ?? 3)
const server = await new PostgresServer().start()
await (await postgresAdapter({ url: server.url('setup') })).close()
const db = new pg.Client({ connectionString: server.url() })
await db.connect()
await db.query('CREATE TABLE insert_locks (key text PRIMARY KEY, owner text NOT NULL, expiration bigint NOT NULL)')
await db.query('CREATE TABLE update_locks (key text PRIMARY KEY, owner text, expiration bigint) WITH (fillfactor = 50)')
await db.query("INSERT INTO update_locks VALUES ('k', NULL, NULL)")
await db.query("INSERT INTO zaris.stores (ns, epoch) VALUES ('bench', 'e')")

const q = async (name: string, text: string, values: unknown[]) => (await db.query({ name, text, values })).rows[0]
let o = 0
const key = Buffer.from('lock:p', 'utf16le').swap16()
const variants: Record<string, () => Promise<void>> = {
  advisory: async () => {
    if (!(await q('a1', 'SELECT pg_try_advisory_lock($1) AS ok', [42])).ok) throw new Error('not taken')
    await q('a2', 'SELECT pg_advisory_unlock($1) AS ok', [42])
  },
  'two SELECT 1': async () => {
    await q('s1', 'SELECT 1 AS one', [])
    await q('s2', 'SELECT 1 AS one', [])
  },
  'row-update lock': async () => {
    const owner = `o${++o}`
    const t = await db.query({ name: 'u1', text: 'UPDATE update_locks SET owner = $2, expiration = $3::bigint WHERE key = $1 AND (owner IS NULL OR expiration < $3::bigint - 30000)', values: ['k', owner, Date.now() + 30_000] })
    if (t.rowCount !== 1) throw new Error('not taken')
    await db.query({ name: 'u2', text: 'UPDATE update_locks SET owner = NULL, expiration = NULL WHERE key = $1 AND owner = $2', values: ['k', owner] })
  },
  'row-insert lock': async () => {
    const owner = `o${++o}`
    await db.query({ name: 'i1', text: 'INSERT INTO insert_locks (key, owner, expiration) VALUES ($1, $2, $3)', values: ['k', owner, Date.now() + 30_000] })
    await db.query({ name: 'i2', text: 'DELETE FROM insert_locks WHERE key = $1 AND owner = $2', values: ['k', owner] })
  },
  'zaris statements': async () => {
    const t = await q('zt', lockSql('take', 'zaris'), ['bench', String(++o), key, 'null', 120000, 1_000_000, 30000, Buffer.from('me')])
    if (!t.done) throw new Error('not taken')
    await q('zr', lockSql('release', 'zaris'), ['bench', String(++o), key, t.revision, 120000, 1_000_000])
  },
}

const times = new Map<string, number[]>()
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, pair] of Object.entries(variants)) {
    for (let i = 0; i < 200; i++) await pair() // warm: statements prepared, pages cached
    const ms: number[] = times.get(name) ?? []
    for (let i = 0; i < N; i++) {
      const t = performance.now()
      await pair()
      ms.push(performance.now() - t)
    }
    times.set(name, ms)
  }
  await db.query('VACUUM insert_locks, update_locks, zaris.entries, zaris.stores')
}
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const advisory = p50(times.get('advisory')!)
for (const [name, ms] of times) {
  const m = p50(ms)
  console.log(`${name.padEnd(18)} p50 ${(m * 1000).toFixed(0).padStart(5)} µs a pair; advisory's time / its time ${(advisory / m).toFixed(3)}x`)
}
await db.end()
await server.dispose()
