/**
 * Which part of a Postgres take + release costs what: the two lock-shaped
 * statements (src/adapters/postgres/lock-path.ts) run from one plain
 * node-postgres client as named statements, whole and with one part taken
 * out at a time, beside the row-insert lock. Per variant: backend CPU per
 * pair (from /proc, so the client's own cost is left out) and WAL bytes per
 * pair. The variants without a part are measurements only: each part is
 * there for a rule (docs/postgres.md).
 *
 * `npx tsx bench/tools/postgres-parts.ts [pairs] [rounds]`
 */
import { spawn } from 'node:child_process'
import pg from 'pg'
import { postgresAdapter } from 'zaris/postgres'
import { lockSql } from '../../src/adapters/postgres/lock-path'
import { PostgresServer } from '../../test/postgres/server'
import { processCpu } from './postgres-cpu'

const N = Number(process.argv[2] ?? 3000)
const ROUNDS = Number(process.argv[3] ?? 2)
const server = await new PostgresServer().start()
await (await postgresAdapter({ url: server.url('setup') })).close()
const db = new pg.Client({ connectionString: server.url() })
await db.connect()
await db.query('CREATE TABLE cache_locks (key text PRIMARY KEY, owner text NOT NULL, expiration bigint NOT NULL)')
await db.query("INSERT INTO zaris.stores (ns, epoch) VALUES ('bench', 'e')")
const pid = (await db.query('SELECT pg_backend_pid() AS p')).rows[0].p as number
const cpu = () => processCpu(pid)
const lsn = async () => (await db.query('SELECT pg_current_wal_lsn()::text AS l')).rows[0].l as string

const key = Buffer.from('lock:p', 'utf16le').swap16()
const take = lockSql('take', 'zaris')
const release = lockSql('release', 'zaris')
type Variant = { take: string; release: string }
const variants: Record<string, Variant> = {
  'zaris (as shipped)': { take, release },
  'planned with enable_seqscan off': { take: `${take} `, release: `${release} ` },
  'take without ON CONFLICT': { take: take.replace('ON CONFLICT (ns, k) DO NOTHING ', ''), release },
  'no log row': { take: take.replace(/, l AS \([^]*?\n  \)\n/, ', l AS (SELECT $2::bigint)\n'), release: release.replace(/, l AS \([^]*?\n  \)\n/, ', l AS (SELECT $2::bigint)\n') },
  'no namespace row (nextval only)': {
    take: take.replace(/UPDATE zaris\.stores SET revision = nextval\('zaris\.revisions'\), logged = logged \+ 1 WHERE ns = \$1::text AND/, "SELECT nextval('zaris.revisions') AS revision, 0 AS logged, now() AS pruned_at, '-infinity'::timestamptz AS watched WHERE $1::text IS NOT NULL AND").replace(/RETURNING revision, clock_timestamp\(\) AS now, logged, pruned_at, watched/, '').replace("AS watched WHERE", 'AS watched, clock_timestamp() AS now WHERE'),
    release: release.replace(/UPDATE zaris\.stores SET revision = nextval\('zaris\.revisions'\), logged = logged \+ 1 WHERE ns = \$1::text AND/, "SELECT nextval('zaris.revisions') AS revision, 0 AS logged, now() AS pruned_at, '-infinity'::timestamptz AS watched, clock_timestamp() AS now WHERE $1::text IS NOT NULL AND").replace(/RETURNING revision, clock_timestamp\(\) AS now, logged, pruned_at, watched/, ''),
  },
}
let n = 0
const pair = (v: Variant, i: number) => async () => {
  const t = await db.query({ name: `t${i}`, text: v.take, values: ['bench', String(++n), key, 'null', 120000, 1_000_000, 30000, Buffer.from('me')] })
  if (!t.rows[0].done) throw new Error('not taken')
  const r = await db.query({ name: `r${i}`, text: v.release, values: ['bench', String(++n), key, t.rows[0].revision, 120000, 1_000_000] })
  if (!r.rows[0].done) throw new Error('not released')
}
let o = 0
const rowPair = async () => {
  const owner = `o${++o}`
  await db.query({ name: 'ri', text: 'INSERT INTO cache_locks (key, owner, expiration) VALUES ($1, $2, $3)', values: ['k', owner, Date.now() + 30_000] })
  await db.query({ name: 'rd', text: 'DELETE FROM cache_locks WHERE key = $1 AND owner = $2', values: ['k', owner] })
}
const all: Array<[string, () => Promise<void>]> = [['row-insert lock', rowPair], ...Object.entries(variants).map(([k, v], i) => [k, pair(v, i)] as [string, () => Promise<void>])]
const sums = new Map<string, { cpu: number; wal: number }>()
for (let r = 0; r < ROUNDS; r++)
  for (const [label, f] of all) {
    await db.query(`SET enable_seqscan = ${label.includes('seqscan off') ? 'off' : 'on'}`)
    for (let i = 0; i < 200; i++) await f()
    const c0 = cpu()
    const l0 = await lsn()
    // PERF=<label part>: perf records the backend while that variant runs (perf report -i /tmp/zaris-parts.perf).
    const perf = process.env.PERF && label.includes(process.env.PERF) && r === 0 ? spawn('perf', ['record', '-e', 'cpu-clock', '-F', '5000', '-g', '-o', '/tmp/zaris-parts.perf', '-p', String(pid)], { stdio: 'ignore' }) : undefined
    if (perf) await new Promise((resolve) => setTimeout(resolve, 500))
    for (let i = 0; i < N; i++) await f()
    const c1 = cpu()
    if (perf) {
      perf.kill('SIGINT')
      await new Promise((resolve) => perf.on('exit', resolve))
    }
    const wal = Number((await db.query('SELECT pg_wal_lsn_diff($1, $2) AS d', [await lsn(), l0])).rows[0].d)
    const s = sums.get(label) ?? { cpu: 0, wal: 0 }
    sums.set(label, { cpu: s.cpu + (c1 - c0) / N, wal: s.wal + wal / N })
    await db.query('VACUUM zaris.stores, zaris.entries, cache_locks')
  }
if (process.env.PLANS) {
  // The plans the named statements got here (as the adapter's would), and how often each kind was made.
  for (const r of (await db.query('SELECT name, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY name')).rows) console.log(r)
  const t = await db.query(`EXPLAIN (COSTS false) EXECUTE t0('bench', 1, '\\x${key.toString('hex')}', 'null', 120000, 1000000, 30000, '\\x6d65')`)
  console.log(t.rows.map((x) => x['QUERY PLAN']).join('\n'))
  const r = await db.query(`EXPLAIN (COSTS false) EXECUTE r0('bench', 1, '\\x${key.toString('hex')}', 5, 120000, 1000000)`)
  console.log(r.rows.map((x) => x['QUERY PLAN']).join('\n'))
}
for (const [label, s] of sums) console.log(`${label.padEnd(34)} backend CPU ${(s.cpu / ROUNDS).toFixed(0).padStart(4)} µs/pair, WAL ${(s.wal / ROUNDS).toFixed(0).padStart(5)} B/pair`)
await db.end()
await server.dispose()
