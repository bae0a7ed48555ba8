/**
 * One client's acquire + release cycle on a redis-server of its own, for the
 * semaphore and lock rows of the Redis group: cycles/s, this process's CPU
 * per cycle, the Redis commands each cycle runs (INFO commandstats) and the
 * server time of its scripts. `sem`: a zaris permit (limit 3); `lock`: a
 * zaris lock; `rs`: redis-semaphore's Semaphore (limit 3), the bench's peer.
 * With `profile`, a V8 CPU profile of this process (summarised).
 *
 *   npx tsx bench/tools/redis-one-client.ts [sem|lock|rs] [seconds=3] [profile]
 *
 * @module
 */
import { Session } from 'node:inspector/promises'
import { Redis } from 'ioredis'
import { Semaphore } from 'redis-semaphore'
import { Client } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { redis as startRedis } from '../lib/procs'
import { summarise } from './cpuprofile'

const [what = 'sem', secs = '3', profile] = process.argv.slice(2)
const server = await startRedis()
const conn = new Redis(server.port, '127.0.0.1')
const client = new Client(await redisAdapter({ client: conn, namespace: 'one' }))

async function cycle(): Promise<void> {
  if (what === 'rs') {
    const s = new Semaphore(conn, 'rs1', 3, { lockTimeout: 30_000, acquireTimeout: 10_000, retryInterval: 10, onLockLost: () => {} })
    if (!(await s.tryAcquire())) throw new Error('no permit free')
    await s.release()
  } else {
    const held = what === 'sem' ? await client.semaphores.acquire('s1', { limit: 3, ttl: 30_000 }) : await client.locks.acquire('l1', { ttl: 30_000 })
    await held!.release()
  }
}

/** Calls and microseconds per command so far, from INFO commandstats. */
async function stats(): Promise<Map<string, { calls: number; usec: number }>> {
  const text = await conn.info('commandstats')
  return new Map([...text.matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g)].map((m) => [m[1]!, { calls: Number(m[2]), usec: Number(m[3]) }]))
}

for (let i = 0; i < 500; i++) await cycle()
const session = new Session()
session.connect()
if (profile) {
  await session.post('Profiler.enable')
  await session.post('Profiler.start')
}
const before = await stats()
const cpu0 = process.cpuUsage()
const t0 = performance.now()
let n = 0
while (performance.now() - t0 < Number(secs) * 1000) {
  await cycle()
  n++
}
const ms = performance.now() - t0
const cpu = process.cpuUsage(cpu0)
const after = await stats()
console.log(`${what}: ${((n / ms) * 1000).toFixed(0)} cycles/s, this process ${((cpu.user + cpu.system) / n).toFixed(1)} µs CPU a cycle (user ${(cpu.user / n).toFixed(1)}, system ${(cpu.system / n).toFixed(1)})`)
const per = [...after].map(([k, v]) => [k, (v.calls - (before.get(k)?.calls ?? 0)) / n, (v.usec - (before.get(k)?.usec ?? 0)) / n] as const).filter(([k, c]) => c >= 0.5 && k !== 'info')
console.log(`Redis per cycle: ${per.map(([k, c, us]) => `${k} ${c.toFixed(2)} (${us.toFixed(1)} µs)`).join(', ')}`)
if (profile) {
  const { profile: p } = await session.post('Profiler.stop')
  if (process.env.SAVE) (await import('node:fs')).writeFileSync(process.env.SAVE, JSON.stringify(p))
  console.log(summarise(p as never, Number(process.env.TOP ?? 30), process.env.FILTER))
}
await client.close()
conn.disconnect()
await server.dispose()
process.exit(0)
