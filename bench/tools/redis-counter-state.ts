/**
 * Does a store grown by earlier work slow the next increment? (issue 16,
 * FINDINGS §24: the full run reads counters lower than `BENCH_ONLY=counters`.)
 * Two redis-servers: one fresh, one grown as the counters group grows its
 * own before the one-client row (batches of 100 increments at once, each
 * leaving a request record, the log at its history cap); then one client's
 * increments back to back on each, and ioredis `INCR` on each, taking turns
 * in rounds, with Redis time per command from INFO commandstats.
 *
 *   npx tsx bench/tools/redis-counter-state.ts [grow=100000] [ops=3000]
 *
 * With RETAIN_MB=n the process first keeps ~n MB of small objects alive, as a
 * full bench run's process holds what its earlier groups left (a larger heap
 * for the garbage collector to mark), to see whether that slows zaris's path
 * more than `INCR`'s.
 *
 * @module
 */
import { loadavg } from 'node:os'
import { Redis } from 'ioredis'
import { Client } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { median } from '../lib/measure'
import { redis as startRedis } from '../lib/procs'
import { takeTurns } from './redis-profile'

const GROW = Number(process.argv[2] ?? 100_000)
const N = Number(process.argv[3] ?? 3000)
const ROUNDS = 10

/** Small objects kept alive for the whole run (RETAIN_MB). */
const retained: Array<{ a: number; b: string; c: number[] }> = []
for (let i = 0; i < Number(process.env.RETAIN_MB ?? 0) * 8_000; i++) retained.push({ a: i, b: `s${i}`, c: [i, i + 1] })

const servers = [await startRedis(), await startRedis()]
const conns = servers.map((s) => new Redis({ host: '127.0.0.1', port: s.port }))
const admins = servers.map((s) => new Redis({ host: '127.0.0.1', port: s.port }))
const clients = await Promise.all(conns.map(async (c) => new Client(await redisAdapter({ client: c, namespace: 'bench-counters' }))))

try {
  const t0 = performance.now()
  for (let i = 0; i < GROW / 100; i++) await Promise.all(Array.from({ length: 100 }, () => clients[1]!.counters.increment('hits')))
  const info = async (k: number) => {
    const keys = await conns[k]!.keys('zaris:*')
    const sizes: string[] = []
    for (const key of keys.sort()) {
      const type = await conns[k]!.type(key)
      const n = type === 'hash' ? await conns[k]!.hlen(key) : type === 'zset' ? await conns[k]!.zcard(key) : type === 'stream' ? await conns[k]!.xlen(key) : 0
      sizes.push(`${key.split(':').pop()} ${n}`)
    }
    return `${sizes.join(', ')}; used_memory ${/used_memory_human:(\S+)/.exec(await admins[k]!.info('memory'))?.[1]}`
  }
  console.log(`grown by ${GROW} increments in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
  console.log(`fresh: ${await info(0)}\ngrown: ${await info(1)}`)

  const steps: Array<[string, number, () => Promise<unknown>]> = [
    ['fresh store, counters.increment', 0, () => clients[0]!.counters.increment('one')],
    ['grown store, counters.increment', 1, () => clients[1]!.counters.increment('one')],
    ['fresh server, INCR', 0, () => conns[0]!.incr('bench:one')],
    ['grown server, INCR', 1, () => conns[1]!.incr('bench:one')],
  ]
  const srv = steps.map(() => [] as number[])
  for (const [, , op] of steps) for (let i = 0; i < 300; i++) await op()
  const lat = await takeTurns(steps.map(([, , op]) => op), N, ROUNDS, {
    before: (j) => admins[steps[j]![1]]!.config('RESETSTAT'),
    after: async (j) => {
      const m = /cmdstat_(evalsha|incr):calls=(\d+),usec=(\d+),/.exec(await admins[steps[j]![1]]!.info('commandstats'))
      if (m) srv[j]!.push(Number(m[3]) / Number(m[2]))
    },
  })
  console.log(`${N} operations per step in ${ROUNDS} rounds; heap used ${(process.memoryUsage().heapUsed / 1e6).toFixed(0)} MB (${retained.length} objects retained); load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  for (let j = 0; j < steps.length; j++) {
    console.log(`${steps[j]![0].padEnd(36)} p50 ${median(lat[j]!).toFixed(0).padStart(4)} µs; Redis ${median(srv[j]!).toFixed(1)} µs per command (median of the turns)`)
  }
} finally {
  await Promise.allSettled(clients.map((c) => c.close()))
  for (const c of [...conns, ...admins]) c.disconnect()
  for (const s of servers) await s.dispose()
}
