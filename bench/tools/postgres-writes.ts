/**
 * What one Postgres acquire + release writes and plans, per contender: rows
 * written (inserted, updated, HOT, deleted, from pg_stat_user_tables), WAL
 * records and bytes (pg_stat_statements and pg_current_wal_lsn before and
 * after N pairs), plans per call (a named statement that is planned again
 * on every execution costs its planning each time), and the plan of each
 * statement of the pair with EXPLAIN (ANALYZE, BUFFERS); and the CPU the
 * backends and this process used per pair. The counts hold on a loaded
 * machine; the CPU less so.
 *
 * `npx tsx bench/tools/postgres-writes.ts [pairs]` (BASE=/path/to/checkout also
 * counts that checkout's adapter, in a schema of its own, taking turns
 * TRIALS times).
 */
import pg from 'pg'
import { postgresAdapter } from 'zaris/postgres'
import { PostgresServer } from '../../test/postgres/server'
import { backendCpu } from './postgres-cpu'

const N = Number(process.argv[2] ?? 2000)
const server = await new PostgresServer({
  settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all', 'pg_stat_statements.track_planning': 'on', 'pg_stat_statements.track_utility': 'off', autovacuum: 'off' },
}).start()
const admin = new pg.Client({ connectionString: server.url() })
await admin.connect()
await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
await admin.query('CREATE TABLE cache_locks (key text PRIMARY KEY, owner text NOT NULL, expiration bigint NOT NULL)')

const tables = async () =>
  (await admin.query("SELECT relname, n_tup_ins AS i, n_tup_upd AS u, n_tup_hot_upd AS h, n_tup_del AS d FROM pg_stat_user_tables WHERE schemaname IN ('zaris', 'zaris_base', 'public') ORDER BY relname")).rows as Array<{ relname: string; i: string; u: string; h: string; d: string }>

async function count(label: string, pair: () => Promise<void>): Promise<void> {
  for (let i = 0; i < 200; i++) await pair()
  // As autovacuum does every minute in a long-lived store (this server runs without it, so that the
  // counts are the pairs' own): the prepared statements are planned again after it, on the tables' new size.
  const churned = await admin.query("SELECT schemaname || '.' || tablename AS t FROM pg_tables WHERE tablename IN ('stores', 'entries', 'cache_locks')")
  await admin.query(`VACUUM ${churned.rows.map((r) => r.t as string).join(', ')}`)
  for (let i = 0; i < 20; i++) await pair()
  await admin.query('SELECT pg_stat_statements_reset()')
  await admin.query('SELECT pg_stat_clear_snapshot()')
  const t0 = await tables()
  const lsn0 = (await admin.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l
  const cpu0 = await backendCpu(admin)
  const node0 = process.cpuUsage()
  for (let i = 0; i < N; i++) await pair()
  const node = process.cpuUsage(node0)
  const cpu = (await backendCpu(admin)) - cpu0
  const lsn1 = (await admin.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l
  const wal = Number((await admin.query('SELECT pg_wal_lsn_diff($1, $2) AS d', [lsn1, lsn0])).rows[0].d)
  await new Promise((r) => setTimeout(r, 700)) // table stats are flushed by the backends at most every 500 ms (idle)
  await admin.query('SELECT pg_stat_clear_snapshot()')
  const t1 = await tables()
  const rows = t1
    .map((t) => {
      const b = t0.find((x) => x.relname === t.relname)!
      const d = (k: 'i' | 'u' | 'h' | 'd') => (Number(t[k]) - Number(b[k])) / N
      return { t: t.relname, ins: d('i'), upd: d('u'), hot: d('h'), del: d('d') }
    })
    .filter((r) => r.ins + r.upd + r.del > 0.001)
  const st = await admin.query(
    `SELECT calls, plans, round((total_exec_time / calls * 1000)::numeric, 1) AS exec_us, round((total_plan_time / greatest(calls, 1) * 1000)::numeric, 1) AS plan_us,
       wal_records, wal_bytes, shared_blks_hit, shared_blks_dirtied, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS q
       FROM pg_stat_statements WHERE toplevel AND query NOT LIKE '%pg_stat%' AND query NOT LIKE '%pg_current_wal%' AND query NOT LIKE '%pg_wal_lsn%' ORDER BY total_exec_time DESC LIMIT 6`,
  )
  console.log(`\n## ${label}: WAL ${(wal / N).toFixed(0)} bytes/pair, backend CPU ${(cpu / N).toFixed(0)} µs/pair, node CPU ${((node.user + node.system) / N).toFixed(0)} µs/pair`)
  for (const r of rows) console.log(`  ${r.t.padEnd(12)} ins ${r.ins.toFixed(2)} upd ${r.upd.toFixed(2)} (hot ${r.hot.toFixed(2)}) del ${r.del.toFixed(2)} per pair`)
  for (const r of st.rows)
    console.log(`  ${(Number(r.calls) / N).toFixed(2)}/pair plans/call ${(Number(r.plans) / Number(r.calls)).toFixed(2)} exec ${r.exec_us} µs plan ${r.plan_us} µs WAL ${(Number(r.wal_records) / Number(r.calls)).toFixed(1)} rec ${(Number(r.wal_bytes) / Number(r.calls)).toFixed(0)} B/call blks hit ${(Number(r.shared_blks_hit) / Number(r.calls)).toFixed(1)} dirtied ${(Number(r.shared_blks_dirtied) / Number(r.calls)).toFixed(2)} ${r.q}`)
}

const row = new pg.Client({ connectionString: server.url() })
await row.connect()
let i = 0
await count('row-insert lock', async () => {
  const owner = `o${++i}`
  await row.query('INSERT INTO cache_locks (key, owner, expiration) VALUES ($1, $2, $3)', ['k', owner, Date.now() + 30_000])
  await row.query('DELETE FROM cache_locks WHERE key = $1 AND owner = $2', ['k', owner])
})
type A = Awaited<ReturnType<typeof postgresAdapter>>
const pair = (a: A) => async () => {
  const r = await a.commit([{ key: 'lock:c', revision: null }], [{ type: 'set', key: 'lock:c', value: null, ttl: 30_000, owner: 'me' }])
  if (!r.ok) throw new Error('not taken')
  await a.commit([{ key: 'lock:c', created: r.entries[0]!.created }], [{ type: 'delete', key: 'lock:c' }])
}
const adapter = await postgresAdapter({ url: server.url('bench'), pg: { max: 1 } })
// The adapter as on main, in a schema of its own (BASE=/path/to/checkout), taking turns.
const base = process.env.BASE ? ((await (await import(`${process.env.BASE}/src/adapters/postgres/index.ts`)).postgresAdapter({ url: server.url('base'), schema: 'zaris_base', pg: { max: 1 } })) as A) : undefined
for (let t = 0; t < Number(process.env.TRIALS ?? 1); t++) {
  await count('zaris take + release', pair(adapter))
  if (base) await count('zaris take + release, BASE', pair(base))
}
await base?.close()
await adapter.close()
// The plans, as the adapter's named statements (the texts pg_stat_statements kept), on a namespace of their own.
if (process.env.EXPLAIN) {
  const texts = (await admin.query("SELECT query FROM pg_stat_statements WHERE query LIKE 'WITH s AS%'")).rows.map((r) => r.query as string)
  texts.sort((a, b) => Number(b.includes('INSERT INTO zaris.entries')) - Number(a.includes('INSERT INTO zaris.entries')))
  await admin.query("INSERT INTO zaris.stores (ns, epoch) VALUES ('x', 'e')")
  const key = Buffer.from('lock:x', 'utf16le').swap16()
  await admin.query("SET plan_cache_mode = force_generic_plan")
  for (const t of texts) {
    const take = t.includes('INSERT INTO zaris.entries')
    await admin.query(`PREPARE p AS ${t}`)
    // The take runs first (texts sorted: 'WITH s AS ( UPDATE … EXISTS' before '… NOT EXISTS'? no: by the entries insert), so the release finds its entry.
    const created = take ? 0 : (await admin.query("SELECT created FROM zaris.entries WHERE ns = 'x'")).rows[0]?.created
    const args = take ? `'x', 7, '\\x${key.toString('hex')}', 'null', 120000, 10000, 30000, '\\x6d65'` : `'x', 8, '\\x${key.toString('hex')}', ${created}, 120000, 10000`
    const plan = (await admin.query(`EXPLAIN (ANALYZE, BUFFERS, WAL, VERBOSE false, COSTS false) EXECUTE p(${args})`)).rows.map((r) => r['QUERY PLAN']).join('\n')
    console.log(`\n## EXPLAIN ${take ? 'take' : 'release'}\n${plan}`)
    await admin.query('DEALLOCATE p')
  }
}
await Promise.all([row.end(), admin.end()])
await server.dispose()
