/**
 * Where a Postgres acquire + release goes: one client, uncontended, on a
 * Postgres of its own with pg_stat_statements (track = all, so the
 * statements inside the commit functions are counted too). Prints, per
 * contender, ops/s, the Node CPU per operation, the statements per
 * operation, and the statements that cost the most server time.
 *
 * `npx tsx bench/tools/postgres-profile.ts [ms per contender]`
 */
import pg from 'pg'
import { postgresAdapter } from 'zaris/postgres'
import { Client } from '../../src/core/client'
import { PostgresServer } from '../../test/postgres/server'
import { backendCpu } from './postgres-cpu'

const MS = Number(process.argv[2] ?? 3000)
const server = await new PostgresServer({
  settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all', 'pg_stat_statements.track_utility': 'off' },
}).start()
const admin = new pg.Client({ connectionString: server.url() })
await admin.connect()
await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
await admin.query('CREATE TABLE cache_locks (key text PRIMARY KEY, owner text NOT NULL, expiration bigint NOT NULL)')

async function measure(label: string, op: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 300; i++) await op()
  await admin.query('SELECT pg_stat_statements_reset()')
  const pgCpu = await backendCpu(admin)
  const cpu = process.cpuUsage()
  const t0 = performance.now()
  let n = 0
  while (performance.now() - t0 < MS) {
    await op()
    n++
  }
  const wall = performance.now() - t0
  const used = process.cpuUsage(cpu)
  const backend = (await backendCpu(admin)) - pgCpu
  const stats = await admin.query(
    `SELECT calls, round(total_exec_time::numeric, 1) AS ms, round((total_exec_time / calls * 1000)::numeric, 1) AS us, toplevel, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS q
       FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 14`,
  )
  const top = stats.rows.filter((r) => r.toplevel)
  const calls = stats.rows.reduce((s, r) => s + Number(r.calls), 0)
  console.log(`\n## ${label}: ${Math.round((n / wall) * 1000)} ops/s, ${((wall / n) * 1000).toFixed(0)} µs/op, node CPU ${(((used.user + used.system) / n) | 0)} µs/op (user ${(used.user / n) | 0}), backend CPU ${(backend / n) | 0} µs/op, top-level statements/op ${(top.reduce((s, r) => s + Number(r.calls), 0) / n).toFixed(2)}, statements/op ${(calls / n).toFixed(1)}`)
  for (const r of stats.rows) console.log(`  ${String((Number(r.calls) / n).toFixed(2)).padStart(5)}/op ${String(r.us).padStart(7)} µs ${r.toplevel ? 'T' : ' '} ${r.q}`)
}

const adv = new pg.Client({ connectionString: server.url() })
await adv.connect()
const row = new pg.Client({ connectionString: server.url() })
await row.connect()
const adapter = await postgresAdapter({ url: server.url('bench'), pg: { max: 4 } })
const client = new Client(adapter)
let i = 0
const only = process.env.ONLY?.split(',')
const want = (l: string) => !only || only.some((o) => l.includes(o))
if (want('advisory')) await measure('advisory pair', async () => {
  await adv.query('SELECT pg_try_advisory_lock($1) AS ok', ['12345'])
  await adv.query('SELECT pg_advisory_unlock($1)', ['12345'])
})
if (want('row')) await measure('row-insert lock', async () => {
  const owner = `o${++i}`
  await row.query('INSERT INTO cache_locks (key, owner, expiration) VALUES ($1, $2, $3)', ['k', owner, Date.now() + 30_000])
  await row.query('DELETE FROM cache_locks WHERE key = $1 AND owner = $2', ['k', owner])
})
const pair = (a: typeof adapter) => async () => {
  const r = await a.commit([{ key: 'lock:c', revision: null }], [{ type: 'set', key: 'lock:c', value: null, ttl: 30_000, owner: 'me' }])
  if (!r.ok) throw new Error('not taken')
  await a.commit([{ key: 'lock:c', created: r.entries[0]!.created }], [{ type: 'delete', key: 'lock:c' }])
}
// The adapter as on main (BASE=/path/to/checkout: its src/adapters/postgres, in a schema of its own), side by side, taking turns.
const base = process.env.BASE ? await (await import(`${process.env.BASE}/src/adapters/postgres/index.ts`)).postgresAdapter({ url: server.url('base'), schema: 'zaris_base', pg: { max: 4 } }) : undefined
for (let t = 0; t < Number(process.env.TRIALS ?? 1); t++) {
  if (want('commit')) await measure('adapter.commit take + release', pair(adapter))
  if (base && want('commit')) await measure('adapter.commit take + release, BASE', pair(base))
}
await base?.close()
const raw = new pg.Client({ connectionString: server.url() })
await raw.connect()
const key = Buffer.from('lock:r', 'utf16le').swap16()
const owner = Buffer.from('me')
let mine = 1n
const pool = new pg.Pool({ connectionString: server.url(), max: 4, allowExitOnIdle: true, idleTimeoutMillis: 10_000 })
let viaPool = false
const rawCall = async (named: boolean) => {
  const q = async (args: unknown[]) => { const db = viaPool ? await pool.connect() : raw; try { return await db.query(named ? { name: 'c1', text: 'SELECT zaris.commit1($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) AS a', values: args } : { text: 'SELECT zaris.commit1($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) AS a', values: args }) } finally { if (viaPool) (db as pg.PoolClient).release() } }
  const a = (await q(['bench', null, String(++mine), false, false, 0, key, false, null, 's', key, 'null', 30000, owner, false, null, 120000, 10000])).rows[0].a
  await q(['bench', null, String(++mine), false, false, 0, key, true, a[3][0], 'd', key, null, null, null, false, null, 120000, 10000])
}
if (want('raw')) await measure('raw commit1 pair, unnamed', () => rawCall(false))
if (want('named')) await measure('raw commit1 pair, named', () => rawCall(true))
viaPool = true
if (want('pool')) await measure('raw commit1 pair, pool checkout per call', () => rawCall(false))
await raw.end()
await pool.end()
if (want('client')) await measure('client.locks acquire + release', async () => {
  const lock = await client.locks.acquire('lock:one', { ttl: 30_000 })
  await lock!.release()
})
await client.close()
await Promise.all([adv.end(), row.end(), admin.end()])
await server.dispose()
