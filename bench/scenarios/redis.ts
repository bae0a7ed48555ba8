/**
 * The Redis adapter against the same peers as the node: Redis `SET NX PX` +
 * Lua release through ioredis, and redlock, on one redis-server of the
 * bench's own; one client, and 16 contending clients. Semaphores against
 * redis-semaphore on the same server: one client, and 8 clients sharing 3 permits.
 * One client also over node-redis and iovalkey (issue 36): the adapter on a
 * client of each, and node-redis's own `SET NX PX` loop.
 *
 * @module
 */
import { Redis } from 'ioredis'
import { Redis as Iovalkey } from 'iovalkey'
import { createClient } from 'redis'
import { redisAdapter } from 'zaris/redis'
import { alternate } from '../lib/compare'
import { contention, nodeRedisPeer, oneClient, redisPeer, redlockPeer, scriptAttempts, zarisPeer, type LockPeer } from '../lib/locks'
import type { Scenario } from '../lib/report'
import { redis as startRedis } from '../lib/procs'
import { redisSemaphorePeer, scriptCalls, zarisSemaphorePeer } from '../lib/semaphores'
import type { BenchContext } from './context'
import { CLIENTS, RETRY, contentionScenario } from './remote'

export async function redisScenarios(ctx: BenchContext): Promise<Scenario[]> {
  const server = await startRedis()
  const conns: Redis[] = []
  const peers: LockPeer[] = []
  const conn = () => {
    const r = new Redis({ host: '127.0.0.1', port: server.port })
    conns.push(r)
    return r
  }
  const make = (p: LockPeer) => (peers.push(p), p)
  const closers: Array<() => Promise<unknown>> = []
  // Each zaris client gets its own ioredis connection, as the Redis peers do (a shared one would pipeline them).
  const zaris = async () => make(zarisPeer(await redisAdapter({ client: conn(), namespace: 'bench' })))
  try {
    const dur = ctx.quick ? 200 : 500
    ctx.log('redis: one client')
    const z1 = await zaris()
    const setnx = make(redisPeer(conn(), RETRY))
    const redlock = make(redlockPeer(conn(), RETRY))
    // The same over node-redis (v6, RESP3) and iovalkey: a client of each, opened as a user would.
    const nodeRedis = createClient({ url: `redis://127.0.0.1:${server.port}` })
    await nodeRedis.connect()
    closers.push(() => nodeRedis.close())
    const valkey = new Iovalkey(server.port, '127.0.0.1')
    closers.push(async () => valkey.disconnect())
    const zNodeRedis = make(zarisPeer(await redisAdapter({ client: nodeRedis, namespace: 'bench-node-redis' })))
    const zValkey = make(zarisPeer(await redisAdapter({ client: valkey, namespace: 'bench-iovalkey' })))
    const nodeRedisSetnx = make(nodeRedisPeer(nodeRedis, RETRY))
    const single = await alternate(
      [
        { label: 'zaris redis adapter', zaris: true, trial: () => oneClient(z1, 'lock:one', dur) },
        { label: 'zaris redis adapter (node-redis)', zaris: true, trial: () => oneClient(zNodeRedis, 'lock:one', dur) },
        { label: 'zaris redis adapter (iovalkey)', zaris: true, trial: () => oneClient(zValkey, 'lock:one', dur) },
        { label: 'Redis SET NX PX + Lua release', zaris: false, trial: () => oneClient(setnx, 'lock:one:setnx', dur) },
        { label: 'node-redis SET NX PX + Lua release', zaris: false, trial: () => oneClient(nodeRedisSetnx, 'lock:one:node-redis', dur) },
        { label: 'redlock', zaris: false, trial: () => oneClient(redlock, 'lock:one:redlock', dur) },
      ],
      ctx.trials,
    )
    ctx.log(`redis: ${CLIENTS} clients`)
    const zs = await Promise.all(Array.from({ length: CLIENTS }, zaris))
    const polls = Array.from({ length: CLIENTS }, () => make(redisPeer(conn(), RETRY)))
    const redlocks = Array.from({ length: CLIENTS }, () => make(redlockPeer(conn(), RETRY)))
    const counter = conn()
    const cdur = ctx.quick ? 400 : 800
    const many = await alternate(
      [
        { label: 'zaris redis adapter, wait', zaris: true, trial: (i) => contention(zs, `lock:many:${i}`, cdur) },
        { label: 'Redis SET NX polling', zaris: false, trial: (i) => contention(polls, `lock:many:setnx:${i}`, cdur) },
        { label: 'redlock, retrying', zaris: false, trial: (i) => contention(redlocks, `lock:many:redlock:${i}`, cdur, scriptAttempts(counter)) },
      ],
      ctx.trials,
    )
    const semaphores = await semaphoreRows(ctx, zarisSemaphorePeer, conn, make, counter)
    return [
      ...semaphores,
      {
        id: 'redis-1',
        title: 'Redis adapter, one client',
        op: 'acquire + release of an uncontended lock on a local redis-server (zaris: one Lua script per commit), the adapter over a client of each library (ioredis, node-redis 6, iovalkey), each with its own connection',
        metric: 'ops',
        rows: single,
      },
      contentionScenario('redis-16', `Redis adapter, ${CLIENTS} contending clients`, many),
    ]
  } finally {
    await Promise.allSettled(peers.map((p) => p.close()))
    await Promise.allSettled(closers.map((c) => c()))
    for (const c of conns) c.disconnect()
    await server.dispose()
  }
}

/** The semaphore limit and clients of the contention run: 8 clients, 3 permits. */
const PERMITS = 3
const SEM_CLIENTS = 8

/** zaris's semaphores against redis-semaphore on the same redis-server: one client, then 8 clients sharing 3 permits. */
async function semaphoreRows(
  ctx: BenchContext,
  zarisPeer: (a: Awaited<ReturnType<typeof redisAdapter>>, limit: number) => LockPeer,
  conn: () => Redis,
  make: (p: LockPeer) => LockPeer,
  counter: Redis,
): Promise<Scenario[]> {
  const zaris = async () => make(zarisPeer(await redisAdapter({ client: conn(), namespace: 'bench-sem' }), PERMITS))
  const dur = ctx.quick ? 200 : 500
  ctx.log('redis: semaphore, one client')
  const z1 = await zaris()
  const r1 = make(redisSemaphorePeer(conn(), PERMITS, RETRY.delay))
  const single = await alternate(
    [
      { label: 'zaris semaphore (redis adapter)', zaris: true, trial: () => oneClient(z1, 'sem:one', dur) },
      { label: 'redis-semaphore Semaphore', zaris: false, trial: () => oneClient(r1, 'sem:one:rs', dur) },
    ],
    ctx.trials,
  )
  ctx.log(`redis: semaphore, ${SEM_CLIENTS} clients, ${PERMITS} permits`)
  const zs = await Promise.all(Array.from({ length: SEM_CLIENTS }, zaris))
  const rs = Array.from({ length: SEM_CLIENTS }, () => make(redisSemaphorePeer(conn(), PERMITS, RETRY.delay)))
  const cdur = ctx.quick ? 400 : 800
  const many = await alternate(
    [
      { label: 'zaris semaphore, wait', zaris: true, trial: (i) => contention(zs, `sem:many:${i}`, cdur) },
      { label: `redis-semaphore, retrying every ${RETRY.delay} ms`, zaris: false, trial: (i) => contention(rs, `sem:many:rs:${i}`, cdur, scriptCalls(counter)) },
    ],
    ctx.trials,
  )
  return [
    {
      id: 'redis-sem-1',
      title: 'Redis: semaphore, one client',
      op: `acquire + release of a permit (limit ${PERMITS}, none held) on a local redis-server: zaris's semaphores through its Redis adapter against redis-semaphore's Semaphore`,
      metric: 'ops',
      rows: single,
    },
    {
      ...contentionScenario('redis-sem-8', `Redis: semaphore, ${SEM_CLIENTS} clients sharing ${PERMITS} permits`, many),
      op: `one success: ${SEM_CLIENTS} clients in one process share a semaphore of ${PERMITS} permits, each acquiring, releasing at once and going again; latency is the wait for a permit; zaris waits in line, redis-semaphore retries every ${RETRY.delay} ms; attempts are tries at a slot (zaris) or acquire scripts run (redis-semaphore)`,
    },
  ]
}
