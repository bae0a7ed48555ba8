/**
 * The Redis adapter's scripts as Redis Functions against `EVALSHA` (issue 16,
 * FINDINGS §24 and §26), taking turns in rounds on one redis-server:
 *
 * 1. the lock script alone, take + release: `EVALSHA` of its `EVAL` text
 *    (helpers built on every call) and `FCALL` of the library's function
 *    (helpers built once), with Redis time per script from `INFO
 *    commandstats`;
 * 2. the whole adapter, the way users call it: `client.locks` acquire +
 *    release and `counters.increment`, once through a connection that runs
 *    functions and once through a user who may not call them (every script
 *    by `EVALSHA`, the fallback), next to redlock's cycle and `INCR`.
 *
 *   npx tsx bench/tools/redis-functions.ts [cycles=2000]
 *
 * @module
 */
import { loadavg } from 'node:os'
import { Redis } from 'ioredis'
import Redlock from 'redlock'
import { connect } from '../../src/index'
import { namespaceKeys } from '../../src/adapters/redis/codec'
import { scriptLibrary } from '../../src/adapters/redis/functions'
import { evalText, LOCK } from '../../src/adapters/redis/scripts'
import { median } from '../lib/measure'
import { redis as startRedis } from '../lib/procs'
import { takeTurns } from './redis-profile'

const N = Number(process.argv[2] ?? 2000)
const ROUNDS = 10
const server = await startRedis()
const r = new Redis({ host: '127.0.0.1', port: server.port })
const admin = new Redis({ host: '127.0.0.1', port: server.port })
await admin.call('ACL', 'SETUSER', 'nofcall', 'on', '>pw', '~*', '&*', '+@all', '-fcall')

type Fn = (...a: Array<string | number>) => Promise<unknown>
r.defineCommand('fnLock', { numberOfKeys: 7, lua: evalText(LOCK) })
const evalLock = (r as unknown as Record<string, Fn>).fnLock!.bind(r)
await r.call('FUNCTION', 'LOAD', 'REPLACE', scriptLibrary().text)
const fcallLock: Fn = (...a) => r.fcall(scriptLibrary().functions.lock, 7, ...a)

const owner = '=cbd0e903-4415-469e-bba0-ff0c921ebfe6'
let q = 0
const cycle = (f: Fn, ns: string) => async () => {
  const keys = namespaceKeys(ns)
  const a = (await f(...keys, 10_000, 500, 0, `r${++q}`, 120_000, 'x', 'r', '', 's', 'null', '30000', owner, '')) as unknown[]
  if (a[0] !== 'ok') throw new Error(`${ns} take: ${String(a[0])} ${String(a[3])}`)
  const b = (await f(...keys, 10_000, 500, 0, `r${++q}`, 120_000, 'x', 'c', String(a[3]).split(' ')[1]!, 'd', '', '', '', '')) as unknown[]
  if (b[0] !== 'ok') throw new Error(`${ns} release: ${String(b[0])}`)
}

/** Redis time of the scripts run since the last RESETSTAT, per call. */
async function scriptTime(): Promise<number> {
  const info = await admin.info('commandstats')
  let usec = 0
  let calls = 0
  for (const m of info.matchAll(/cmdstat_(evalsha|fcall):calls=(\d+),usec=(\d+),/g)) {
    usec += Number(m[3])
    calls += Number(m[2])
  }
  return usec / calls
}

const url = (ns: string, user = '') => `redis://${user}127.0.0.1:${server.port}/0?ns=${ns}`
const viaFunctions = await connect(url('fn'))
const viaEval = await connect(url('ev', 'nofcall:pw@'))
const redlock = new Redlock([r], { retryCount: 0, driftFactor: 0.01 })
const lockCycle = (c: typeof viaFunctions) => async () => (await c.locks.acquire('job', { ttl: 30_000 }))!.release()
const increment = (c: typeof viaFunctions) => () => c.counters.increment('n')

try {
  const scripts: Array<[string, () => Promise<unknown>]> = [
    ['lock script by EVALSHA', cycle(evalLock, 'a')],
    ['lock script by FCALL', cycle(fcallLock, 'b')],
  ]
  const adapter: Array<[string, () => Promise<unknown>]> = [
    ['client.locks, functions', lockCycle(viaFunctions)],
    ['client.locks, EVALSHA', lockCycle(viaEval)],
    ['redlock acquire + release', async () => (await redlock.lock('rl', 30_000)).unlock()],
    ['counters.increment, functions', increment(viaFunctions)],
    ['counters.increment, EVALSHA', increment(viaEval)],
    ['INCR', () => r.incr('plain')],
  ]
  for (const [, op] of [...scripts, ...adapter]) for (let i = 0; i < 200; i++) await op()
  const srv = scripts.map(() => [] as number[])
  const lat = await takeTurns(scripts.map(([, op]) => op), N, ROUNDS, {
    before: () => admin.config('RESETSTAT'),
    after: async (j) => void srv[j]!.push(await scriptTime()),
  })
  const whole = await takeTurns(adapter.map(([, op]) => op), N, ROUNDS)
  console.log(`${N} cycles per step in ${ROUNDS} rounds; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  for (let j = 0; j < scripts.length; j++) {
    console.log(`${scripts[j]![0].padEnd(32)} cycle p50 ${median(lat[j]!).toFixed(0).padStart(4)} µs; Redis time per script ${median(srv[j]!).toFixed(1)} µs`)
  }
  for (let j = 0; j < adapter.length; j++) console.log(`${adapter[j]![0].padEnd(32)} p50 ${median(whole[j]!).toFixed(0).padStart(4)} µs`)
  const p = (j: number) => median(whole[j]!)
  console.log(`by p50: locks vs redlock ${(p(2) / p(0)).toFixed(3)}x (functions) / ${(p(2) / p(1)).toFixed(3)}x (EVALSHA); counters vs INCR ${(p(5) / p(3)).toFixed(3)}x / ${(p(5) / p(4)).toFixed(3)}x`)
} finally {
  await viaFunctions.close()
  await viaEval.close()
  r.disconnect()
  admin.disconnect()
  await server.dispose()
}
