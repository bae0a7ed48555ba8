/**
 * Redis time of each script the Redis adapter runs while N clients contend
 * for one lock (as the bench's contention rows: acquire with wait, release
 * at once, again): every `FCALL` is logged by Redis's SLOWLOG (threshold
 * 0), and its time in Redis (µs, the script's whole run) is grouped by
 * function (the one-key lock script by its op and key: a release of the
 * lock, a place in line joined or left). A waiter's take parks; a release hands the lock to the first
 * parked take in its own script, so its time grows with the waiters (each
 * parked take is read and tried again). Compare two trees by running this
 * in each, in turns: Redis time is less moved by a loaded machine than
 * successes/s.
 *
 *   npx tsx bench/tools/redis-script-times.ts [clients=16] [seconds=2]
 *
 * @module
 */
import { loadavg } from 'node:os'
import { Redis } from 'ioredis'
import { Client } from '../../src/index'
import { redisAdapter } from '../../src/adapters/redis/index'
import { scriptLibrary } from '../../src/adapters/redis/functions'
import { redis as startRedis } from '../lib/procs'

const clients = Number(process.argv[2] ?? 16)
const seconds = Number(process.argv[3] ?? 2)
const server = await startRedis()
const admin = new Redis({ host: '127.0.0.1', port: server.port })
const peers = await Promise.all(Array.from({ length: clients }, async () => new Client(await redisAdapter({ url: `redis://127.0.0.1:${server.port}/0`, namespace: 'times' }))))

let stop = false
let successes = 0
const run = (key: string) =>
  Promise.all(
    peers.map(async (c) => {
      while (!stop) {
        const lock = (await c.locks.acquire(key, { ttl: 30_000, wait: 60_000 }))!
        successes++
        await lock.release()
      }
    }),
  )
// Warm-up: scripts loaded, connections open.
let warm = run('warm')
await new Promise((r) => setTimeout(r, 300))
stop = true
await warm
stop = false
successes = 0
await admin.config('SET', 'slowlog-log-slower-than', '0')
await admin.config('SET', 'slowlog-max-len', '1000000')
await admin.slowlog('RESET')
const load = loadavg()[0]!
warm = run('k')
await new Promise((r) => setTimeout(r, seconds * 1000))
stop = true
await warm

const names = new Map(Object.entries(scriptLibrary().functions).map(([k, v]) => [v, k]))
const log = (await admin.slowlog('GET', -1)) as Array<[number, number, number, string[]]>
const byFn = new Map<string, number[]>()
for (const [, , us, args] of log) {
  if (String(args[0]).toUpperCase() !== 'FCALL') continue
  const name = names.get(String(args[1])) ?? String(args[1])
  // The one-key lock script (scripts.ts LOCK): ARGV[6] is its key, ARGV[9] its op; ARGV[i] is args[11 + i] (9 keys).
  const fn = name === 'lock' ? `lock: ${args[20] === 'd' ? 'delete' : 'set'} ${args[17] === 'k' ? 'the lock' : 'a place'}` : name
  byFn.set(fn, [...(byFn.get(fn) ?? []), us])
}
const q = (a: number[], p: number) => [...a].sort((x, y) => x - y)[Math.floor(p * (a.length - 1))]!
console.log(`${clients} clients, ${seconds} s, load ${load.toFixed(1)}: ${successes} successes`)
for (const [fn, us] of [...byFn].sort()) {
  console.log(`  ${fn.padEnd(10)} ${String(us.length).padStart(6)} calls, Redis time p50 ${q(us, 0.5)} µs, p90 ${q(us, 0.9)} µs, ${(us.reduce((a, b) => a + b, 0) / successes).toFixed(0)} µs a success`)
}
await Promise.all(peers.map((c) => c.close()))
admin.disconnect()
await server.dispose()
process.exit(0)
