/**
 * Where one acquire+release through the Redis adapter spends its time, step
 * by step, on a redis-server of its own (issue 16): the wire floor (PING, and
 * `redis-cli --latency`), the redlock cycle (SET NX PX + EVALSHA release), an
 * empty EVALSHA with the commit script's keys and arguments, the generic
 * commit script and the lock-shaped one by bare `EVALSHA`, `adapter.commit`
 * alone (which runs the lock-shaped one), the whole `client.locks` cycle; on the server, `INFO commandstats`
 * usec_per_call per phase, and the commit script's own Redis calls timed
 * inside the script (an instrumented copy that wraps `redis.call` in `TIME`).
 *
 *   npx tsx bench/tools/redis-breakdown.ts [cycles=3000]
 *
 * @module
 */
import { execFileSync } from 'node:child_process'
import { Redis } from 'ioredis'
import { Client } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { COMMIT, evalText, LOCK } from '../../src/adapters/redis/scripts'
import { instrument } from './redis-profile'
import { namespaceKeys } from '../../src/adapters/redis/codec'
import { median, quantile } from '../lib/measure'
import { redis as startRedis } from '../lib/procs'

const N = Number(process.argv[2] ?? 3000)
const server = await startRedis()
const r = new Redis({ host: '127.0.0.1', port: server.port })
const admin = new Redis({ host: '127.0.0.1', port: server.port })

/** The steps take turns in this many rounds, so load from elsewhere falls on all of them alike. */
const ROUNDS = 10

/** usec_per_call of every command Redis ran while `phase` did, from INFO commandstats. */
async function serverSide(phase: () => Promise<unknown>): Promise<Record<string, { calls: number; usec: number }>> {
  await admin.config('RESETSTAT')
  await phase()
  const info = await admin.info('commandstats')
  const out: Record<string, { calls: number; usec: number }> = {}
  for (const m of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+),usec=\d+,usec_per_call=([\d.]+)/g)) {
    if (m[1] === 'config' || m[1] === 'info') continue
    out[m[1]!] = { calls: Number(m[2]), usec: Number(m[3]) }
  }
  return out
}

const fmtStats = (s: Record<string, { calls: number; usec: number }>) =>
  Object.entries(s)
    .map(([k, v]) => `${k} ${v.usec.toFixed(1)} µs/call (${v.calls})`)
    .join(', ')

try {
  console.log(`redis-server ${server.port}, ${N} operations per step, the steps taking turns in ${ROUNDS} rounds; node ${process.version}`)
  const cli = execFileSync('redis-cli', ['-p', String(server.port), '--latency', '--raw'], { timeout: 5000 }).toString().trim().split(' ')
  console.log(`redis-cli --latency (ms; min max avg samples): ${cli.join(' ')}`)

  // The redlock cycle, as redlock v4 does it on one server: SET NX PX, then a Lua compare-and-delete.
  r.defineCommand('bdRelease', { numberOfKeys: 1, lua: "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end" })
  const rr = r as Redis & { bdRelease(key: string, token: string): Promise<number> }
  let tokens = 0
  const redlockCycle = async () => {
    const token = `t${++tokens}:${Math.random()}`
    if ((await r.set('bd:lock', token, 'PX', 30_000, 'NX')) !== 'OK') throw new Error('not free')
    await rr.bdRelease('bd:lock', token)
  }

  // An empty script with the commit's 7 keys and its 16 arguments: EVALSHA's own cost, on the wire and in Redis.
  const keys = namespaceKeys('bd')
  r.defineCommand('bdEmpty', { numberOfKeys: 7, lua: 'return 1' })
  r.defineCommand('bdBare', { numberOfKeys: 0, lua: 'return 1' })
  const argsAcquire = ['10000', '500', '0', 'req-0123456789abcdef', '120000', '1', 'x', 'r', '', '1', 's', 'x', 'null', '30000', '=cbd0e903-4415-469e-bba0-ff0c921ebfe6', '']
  const scripts = r as unknown as { bdEmpty(...a: string[]): Promise<unknown>; bdBare(): Promise<unknown>; bdCommit(...a: Array<string | number>): Promise<unknown[]> }

  // The commit script itself, called as the adapter calls it but without the adapter's JavaScript around it.
  r.defineCommand('bdCommit', { numberOfKeys: 7, lua: evalText(COMMIT) })
  let rawReq = 0
  const rawCycle = async () => {
    const a = await scripts.bdCommit(...keys, 10_000, 500, 0, `raw${++rawReq}`, 120_000, 1, 'w', 'r', '', 1, 's', 'w', 'null', '30000', '=cbd0e903-4415-469e-bba0-ff0c921ebfe6', '')
    if (a[0] !== 'ok') throw new Error(`raw acquire: ${String(a[0])}`)
    const b = await scripts.bdCommit(...keys, 10_000, 500, 0, `raw${++rawReq}`, 120_000, 1, 'w', 'c', String(a[3]).split(' ')[1]!, 1, 'd', 'w', '', '', '', '')
    if (b[0] !== 'ok') throw new Error(`raw release: ${String(b[0])}`)
  }

  // The lock-shaped script the adapter runs for these two commits, by EVALSHA, without the adapter's JavaScript.
  r.defineCommand('bdLock', { numberOfKeys: 7, lua: evalText(LOCK) })
  const lockScript = (r as unknown as { bdLock(...a: Array<string | number>): Promise<unknown[]> }).bdLock.bind(r)
  const lockCycle = async () => {
    const a = await lockScript(...keys, 10_000, 500, 0, `raw${++rawReq}`, 120_000, 'v', 'r', '', 's', 'null', '30000', '=cbd0e903-4415-469e-bba0-ff0c921ebfe6', '')
    if (a[0] !== 'ok') throw new Error(`lock acquire: ${String(a[0])}`)
    const b = await lockScript(...keys, 10_000, 500, 0, `raw${++rawReq}`, 120_000, 'v', 'c', String(a[3]).split(' ')[1]!, 'd', '', '', '', '')
    if (b[0] !== 'ok') throw new Error(`lock release: ${String(b[0])}`)
  }

  // adapter.commit alone, the two commits of a lock cycle.
  const adapter = await redisAdapter({ client: r, namespace: 'bd' })
  let created = 0
  const commitCycle = async () => {
    const res = await adapter.commit([{ key: 'x', revision: null }], [{ type: 'set', key: 'x', value: null, ttl: 30_000, owner: 'cbd0e903-4415-469e-bba0-ff0c921ebfe6' }])
    if (!res.ok) throw new Error('not free')
    created = res.entries[0]!.created
    await adapter.commit([{ key: 'x', created }], [{ type: 'delete', key: 'x' }])
  }

  // The whole client cycle.
  const client = new Client(adapter)
  const clientCycle = async () => {
    const lock = await client.locks.acquire('y', { ttl: 30_000, wait: 0 })
    if (!lock) throw new Error('not free')
    await lock.release()
  }

  const steps: Array<[string, () => Promise<unknown>]> = [
    ['ioredis PING', () => r.ping()],
    ['EVALSHA return 1, no keys or args', () => scripts.bdBare()],
    ['EVALSHA return 1, 7 keys + 16 args', () => scripts.bdEmpty(...keys, ...argsAcquire)],
    ['redlock cycle (SET NX PX + EVALSHA release)', redlockCycle],
    ['commit script by EVALSHA, acquire + release', rawCycle],
    ['lock script by EVALSHA, acquire + release', lockCycle],
    ['adapter.commit acquire + release', commitCycle],
    ['client.locks.acquire + release', clientCycle],
  ]
  const lat = steps.map(() => [] as number[])
  for (const [, op] of steps) for (let i = 0; i < 200; i++) await op()
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < steps.length; k++) {
      const j = (round + k) % steps.length
      const op = steps[j]![1]
      for (let i = 0; i < N / ROUNDS; i++) {
        const t = performance.now()
        await op()
        lat[j]!.push((performance.now() - t) * 1000)
      }
    }
  }
  steps.forEach(([name], j) => console.log(`${name.padEnd(48)} p50 ${median(lat[j]!).toFixed(0).padStart(4)} µs, p90 ${quantile(lat[j]!, 0.9).toFixed(0).padStart(5)} µs`))

  console.log('\non the server (INFO commandstats, 1000 operations each):')
  for (const [name, op] of steps.slice(3)) {
    const st = await serverSide(async () => {
      for (let i = 0; i < 1000; i++) await op()
    })
    // Commands the client sent (a script's own calls are inside its time) against the calls scripts made.
    const sent = Object.entries(st).filter(([k]) => k === 'evalsha' || k === 'eval' || k === 'set')
    const inner = Object.entries(st).filter(([k]) => k !== 'evalsha' && k !== 'eval' && k !== 'set' && !k.startsWith('config'))
    const sentUs = sent.reduce((a, [, v]) => a + v.calls * v.usec, 0) / 1000
    const scriptCalls = (st.evalsha?.calls ?? 0) + (st.eval?.calls ?? 0)
    const innerCalls = inner.reduce((a, [, v]) => a + v.calls, 0) / scriptCalls
    const innerUs = inner.reduce((a, [, v]) => a + v.calls * v.usec, 0) / scriptCalls
    console.log(`  ${name}: ${sentUs.toFixed(1)} µs of Redis time per cycle; ${scriptCalls / 1000} scripts per cycle, each making ${innerCalls.toFixed(1)} Redis calls that take ${innerUs.toFixed(1)} µs`)
    console.log(`    ${fmtStats(st)}`)
  }

  // Inside the commit script: each Redis call wrapped in TIME, totals kept in a hash of the tool's own.
  const prof = 'zaris:{bd}:prof'
  const instrumented = instrument(evalText(COMMIT), prof)
  r.defineCommand('bdProfiled', { numberOfKeys: 7, lua: instrumented })
  // The cost of the timing itself: a TIME pair around PING.
  r.defineCommand('bdTimePair', {
    numberOfKeys: 0,
    lua: "local s = 0 for i = 1, 100 do local a = redis.call('TIME') redis.call('PING') local b = redis.call('TIME') s = s + (tonumber(b[1]) - tonumber(a[1])) * 1000000 + tonumber(b[2]) - tonumber(a[2]) end return tostring(s / 100)",
  })
  const pair = await (r as unknown as { bdTimePair(): Promise<string> }).bdTimePair()
  const profiled = (r as unknown as { bdProfiled(...a: Array<string | number>): Promise<unknown[]> }).bdProfiled
  let pc = 0
  let req = 0
  const profCycle = async () => {
    const i = ++req
    const a = (await profiled.call(r, ...keys, 10_000, 500, 0, `p${i}a`, 120_000, 1, 'z', 'r', '', 1, 's', 'z', 'null', '30000', '=owner', '')) as unknown[]
    if (a[0] !== 'ok') throw new Error(`instrumented acquire: ${String(a[0])}`)
    pc = Number(String(a[3]).split(' ')[1])
    const b = (await profiled.call(r, ...keys, 10_000, 500, 0, `p${i}b`, 120_000, 1, 'z', 'c', pc, 1, 'd', 'z', '', '', '', '')) as unknown[]
    if (b[0] !== 'ok') throw new Error(`instrumented release: ${String(b[0])}`)
  }
  await r.del(prof)
  const stats = await serverSide(async () => {
    for (let i = 0; i < 1000; i++) await profCycle()
  })
  const h = await r.hgetall(prof)
  const commits = Number(h['#'])
  delete h['#']
  console.log(`\ninside the commit script (per commit, ${commits} commits; each timed call includes ~${Number(pair).toFixed(2)} µs of TIME pair around it):`)
  let inCalls = 0
  for (const [name, us] of Object.entries(h).sort((a, b) => Number(b[1]) - Number(a[1]))) {
    inCalls += Number(us) / commits
    console.log(`  ${name.padEnd(16)} ${(Number(us) / commits).toFixed(2)} µs`)
  }
  console.log(`  (sum of calls ${inCalls.toFixed(1)} µs; the instrumented script's usec_per_call ${fmtStats(stats)})`)
  await client.close()
} finally {
  r.disconnect()
  admin.disconnect()
  await server.dispose()
}
