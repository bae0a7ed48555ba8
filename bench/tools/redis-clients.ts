/**
 * The Redis adapter over each client library (issue 36), one lock cycle
 * (acquire + release) at a time on a redis-server of its own: ioredis,
 * node-redis 6 (RESP3, its default, and RESP2), node-redis 5 (RESP2) and
 * iovalkey, each a user's client handed to the adapter; beside them a `PING`
 * through each, the libraries' own floor. Median latency and the CPU time
 * of this process per cycle (less moved by other load on a shared machine
 * than the wall clock). The steps take turns in rounds so load from
 * elsewhere falls on all alike.
 *
 *   npx tsx bench/tools/redis-clients.ts [cycles=4000]
 *
 * @module
 */
import { Redis } from 'ioredis'
import { Redis as Iovalkey } from 'iovalkey'
import { createClient } from 'redis'
import { createClient as createClientV5 } from 'redis5'
import { Client } from 'zaris'
import { redisAdapter, type RedisClient } from 'zaris/redis'
import { median } from '../lib/measure'
import { redis as startRedis } from '../lib/procs'
import { takeTurns } from './redis-profile'

const N = Number(process.argv[2] ?? 4000)
const ROUNDS = 20
const server = await startRedis()
const url = `redis://127.0.0.1:${server.port}`

const libraries: Array<[string, () => Promise<{ client: RedisClient; ping(): Promise<unknown>; close(): Promise<unknown> }>]> = [
  ['ioredis', async () => {
    const r = new Redis(server.port, '127.0.0.1')
    return { client: r, ping: () => r.call('PING'), close: async () => r.disconnect() }
  }],
  ['node-redis 6 (RESP3)', async () => {
    const r = await createClient({ url }).connect()
    return { client: r, ping: () => r.sendCommand(['PING']), close: () => r.close() }
  }],
  ['node-redis 6 (RESP2)', async () => {
    const r = await createClient({ url, RESP: 2 }).connect()
    return { client: r, ping: () => r.sendCommand(['PING']), close: () => r.close() }
  }],
  ['node-redis 5 (RESP2)', async () => {
    const r = await createClientV5({ url }).connect()
    return { client: r as unknown as RedisClient, ping: () => r.sendCommand(['PING']), close: () => r.close() }
  }],
  ['iovalkey', async () => {
    const r = new Iovalkey(server.port, '127.0.0.1')
    return { client: r, ping: () => r.call('PING'), close: async () => r.disconnect() }
  }],
]

const opened = await Promise.all(libraries.map(async ([name, open]) => ({ name, ...(await open()) })))
const clients = await Promise.all(opened.map(async (o, i) => new Client(await redisAdapter({ client: o.client, namespace: `clients-${i}` }))))
const cycle = (c: Client) => async () => {
  const lock = await c.locks.acquire('lock:cycle', { ttl: 30_000 })
  await lock!.release()
}
const steps = [...opened.map((o) => o.ping), ...clients.map(cycle)]
const names = [...opened.map((o) => `PING, ${o.name}`), ...opened.map((o) => `acquire + release, ${o.name}`)]
const cpu = steps.map(() => 0)
let started = process.cpuUsage()
await takeTurns(steps, 200 * steps.length, 1) // warm-up
const lat = await takeTurns(steps, N, ROUNDS, {
  before: async () => void (started = process.cpuUsage()),
  after: async (j) => {
    const d = process.cpuUsage(started)
    cpu[j]! += d.user + d.system
  },
})
console.log(`${N} per step, ${ROUNDS} rounds; load average ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')}`)
const base = (i: number) => (i < opened.length ? 0 : opened.length)
for (const [i, name] of names.entries()) {
  const p50 = median(lat[i]!)
  const ratio = p50 / median(lat[base(i)]!)
  console.log(`${name.padEnd(40)} p50 ${p50.toFixed(0).padStart(5)} µs (${ratio.toFixed(2)}x ioredis)   cpu ${(cpu[i]! / N).toFixed(0).padStart(4)} µs per op`)
}
await Promise.all(clients.map((c) => c.close()))
await Promise.all(opened.map((o) => o.close()))
await server.dispose()
