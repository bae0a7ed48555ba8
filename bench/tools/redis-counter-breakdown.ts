/**
 * Where one `counters.increment` through the Redis adapter spends its time
 * against one ioredis `INCR` (issue 16), step by step on a redis-server of
 * its own: the wire (PING, INCR), an empty EVALSHA with the add's keys and
 * arguments, the commit script and the short add script by EVALSHA with no
 * adapter code, `adapter.commit` of one add, and `client.counters.increment`;
 * on the server, `INFO commandstats` usec_per_call per step, and each
 * script's own Redis calls timed inside it (a copy that wraps `redis.call` in
 * `TIME`, as bench/tools/redis-breakdown.ts does for a lock).
 *
 *   npx tsx bench/tools/redis-counter-breakdown.ts [increments=3000] [checkout to compare, e.g. /work/main]
 *
 * With a second checkout, its commit script (the add by the generic path),
 * and its add script if it has one, run as more steps, so two versions take
 * turns on one redis-server.
 *
 * @module
 */
import { Redis } from 'ioredis'
import { Client } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { namespaceKeys } from '../../src/adapters/redis/codec'
import { COMMIT_PARTS, PRELUDE } from '../../src/adapters/redis/prelude'
import { ADD, COMMIT, evalText } from '../../src/adapters/redis/scripts'
import { instrument } from './redis-profile'
import { median, quantile } from '../lib/measure'
import { redis as startRedis } from '../lib/procs'

const N = Number(process.argv[2] ?? 3000)
const base = process.argv[3]
const baseScripts = base ? ((await import(`${base}/src/adapters/redis/scripts.ts`)) as { COMMIT_SCRIPT: string; ADD_SCRIPT?: string }) : undefined
const server = await startRedis()
const r = new Redis({ host: '127.0.0.1', port: server.port })
const admin = new Redis({ host: '127.0.0.1', port: server.port })
const ROUNDS = 10
type Run = (...a: Array<string | number>) => Promise<unknown[]>

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

try {
  console.log(`redis-server ${server.port}, ${N} increments per step, the steps taking turns in ${ROUNDS} rounds; node ${process.version}`)
  const keys = namespaceKeys('bc')
  const define = (name: string, lua: string): Run => {
    r.defineCommand(name, { numberOfKeys: 7, lua })
    const f = (r as unknown as Record<string, Run>)[name]!
    return (...a) => f.call(r, ...keys, ...a)
  }
  const empty = define('bcEmpty', 'return 1')
  // What running the shared parts costs before a script does anything: its helpers built, TIME read.
  const prelude = define('bcPrelude', `${PRELUDE}\nreturn 1`)
  const parts = define('bcParts', `${PRELUDE}${COMMIT_PARTS}\nreturn 1`)
  const commit = define('bcCommit', evalText(COMMIT))
  const add = define('bcAdd', evalText(ADD))
  const old = baseScripts ? define('bcBase', baseScripts.COMMIT_SCRIPT) : undefined
  const oldAdd = baseScripts?.ADD_SCRIPT ? define('bcBaseAdd', baseScripts.ADD_SCRIPT) : undefined
  let req = 0
  const ok = (a: unknown[]) => {
    if (a[0] !== 'ok') throw new Error(`script answered ${String(a[0])}`)
  }
  // Arguments as the adapter sends them: history, sweep limit, seen, request id, retention, then the add.
  const common = (): Array<string | number> => [10_000, 500, 0, `bc-${++req}-0123456789abcdef0123`, 120_000]
  const adapter = await redisAdapter({ client: r, namespace: 'bc' })
  const client = new Client(adapter)

  const steps: Array<[string, () => Promise<unknown>]> = [
    ['ioredis PING', () => r.ping()],
    ['ioredis INCR', () => r.incr('bc:incr')],
    ['EVALSHA return 1, 7 keys + the add\'s 7 args', () => empty(...common(), 'n', '1')],
    ['EVALSHA prelude, then return 1', () => prelude(...common(), 'n', '1')],
    ['EVALSHA prelude + commit parts, then return 1', () => parts(...common(), 'n', '1')],
    ['commit script by EVALSHA, one add', async () => ok(await commit(...common(), 0, 1, 'a', 'n1', '1', '', '', ''))],
    ['add script by EVALSHA', async () => ok(await add(...common(), 'n2', '1'))],
    ...(old ? [['base checkout\'s commit script, one add', async () => ok(await old(...common(), 0, 1, 'a', 'n3', '1', '', '', ''))] as [string, () => Promise<unknown>]] : []),
    ...(oldAdd ? [['base checkout\'s add script', async () => ok(await oldAdd(...common(), 'n6', '1'))] as [string, () => Promise<unknown>]] : []),
    ['adapter.commit, one add', () => adapter.commit([], [{ type: 'add', key: 'n4', delta: 1 }])],
    ['client.counters.increment', () => client.counters.increment('n5')],
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

  console.log('\non the server (INFO commandstats, 1000 increments each; calls per increment):')
  for (const [name, op] of steps.slice(1)) {
    const st = await serverSide(async () => {
      for (let i = 0; i < 1000; i++) await op()
    })
    const top = (st.evalsha ?? st.incr)!
    const inner = Object.entries(st).filter(([k]) => k !== 'evalsha' && k !== 'eval' && k !== 'incr')
    const innerCalls = inner.reduce((a, [, v]) => a + v.calls, 0) / 1000
    const innerUs = inner.reduce((a, [, v]) => a + v.calls * v.usec, 0) / 1000
    console.log(`  ${name.padEnd(46)} ${top.usec.toFixed(1).padStart(5)} µs per call; ${innerCalls.toFixed(1)} Redis calls inside, ${innerUs.toFixed(1)} µs`)
  }

  const pair = Number(await r.eval("local s = 0 for i = 1, 100 do local a = redis.call('TIME') redis.call('PING') local b = redis.call('TIME') s = s + (tonumber(b[1]) - tonumber(a[1])) * 1000000 + tonumber(b[2]) - tonumber(a[2]) end return tostring(s / 100)", 0))
  const profiled: Array<[string, string, Run, (k: string) => Array<string | number>]> = [
    ['commit script, one add', evalText(COMMIT), define('bcCommitP', instrument(evalText(COMMIT), 'zaris:{bc}:p1')), (k) => [0, 1, 'a', k, '1', '', '', '']],
    ['add script', evalText(ADD), define('bcAddP', instrument(evalText(ADD), 'zaris:{bc}:p2')), (k) => [k, '1']],
  ]
  for (const [name, , run, args] of profiled) {
    const prof = `zaris:{bc}:p${profiled.findIndex((p) => p[0] === name) + 1}`
    await r.del(prof)
    for (let i = 0; i < 1000; i++) ok(await run(...common(), ...args('pk')))
    const h = await r.hgetall(prof)
    const n = Number(h['#'])
    delete h['#']
    const rows = Object.entries(h).sort((a, b) => Number(b[1]) - Number(a[1]))
    console.log(`\ninside the ${name} (per increment, ${n} of them; each timed call includes ~${pair.toFixed(2)} µs of TIME pair):`)
    console.log('  ' + rows.map(([k, us]) => `${k} ${(Number(us) / n).toFixed(2)}`).join(', '))
  }
  await client.close()
} finally {
  r.disconnect()
  admin.disconnect()
  await server.dispose()
}
