/**
 * Handover latency with 8 waiters (issue 16): release -> the next waiter
 * holds, for zaris through a node (memory, a process of its own over
 * loopback HTTP) and through the Redis adapter, against etcd3's `lock()`
 * waiting on a watch of the key, on an etcd member of the bench's own. Each
 * of the 9 clients (a holder and 8 waiters) has a connection of its own; all
 * live in this process.
 *
 * @module
 */
import { Redis } from 'ioredis'
import { Etcd3 } from 'etcd3'
import { httpAdapter } from 'zaris/http'
import { redisAdapter } from 'zaris/redis'
import { etcdAdapter } from 'zaris/etcd'
import { alternate, type Contender } from '../lib/compare'
import { etcdLockPeer, handovers } from '../lib/handover'
import { zarisPeer, type LockPeer } from '../lib/locks'
import type { Scenario } from '../lib/report'
import { ETCD, etcd as startEtcd, node, redis as startRedis, type Etcd } from '../lib/procs'
import type { BenchContext } from './context'

export const WAITERS = 8
/** Between handovers: the last holder queues again and the line settles. */
const SETTLE_MS = 20

export async function handoverScenarios(ctx: BenchContext): Promise<Scenario[]> {
  const n = await node()
  const server = await startRedis()
  let etcd: Etcd | undefined
  let why: string | undefined
  try {
    etcd = await startEtcd()
  } catch (err) {
    why = `etcd could not be started (${(err as Error).message.split('\n')[0]}); install Debian's etcd-server or set ZARIS_ETCD (tried "${ETCD}")`
    ctx.log(`handover: ${why}`)
  }
  const conns: Redis[] = []
  const etcds: Etcd3[] = []
  const peers: LockPeer[] = []
  const make = (p: LockPeer) => (peers.push(p), p)
  const clients = WAITERS + 1
  try {
    const nodePeers = Array.from({ length: clients }, () => make(zarisPeer(httpAdapter({ endpoints: [n.url], namespace: 'bench' }))))
    const redisPeers = await Promise.all(
      Array.from({ length: clients }, async () => {
        const r = new Redis({ host: '127.0.0.1', port: server.port })
        conns.push(r)
        return make(zarisPeer(await redisAdapter({ client: r, namespace: 'bench' })))
      }),
    )
    const rounds = ctx.quick ? 15 : 30
    const contenders: Contender[] = [
      { label: 'zaris node (memory)', zaris: true, trial: (i) => handovers(nodePeers, `lock:handover:${i}`, rounds, SETTLE_MS) },
      { label: 'zaris redis adapter', zaris: true, trial: (i) => handovers(redisPeers, `lock:handover:${i}`, rounds, SETTLE_MS) },
    ]
    if (etcd) {
      // Each zaris client opens its own adapter; the adapter shares one etcd3 connection per host list, as one process would.
      const adapterPeers = await Promise.all(
        Array.from({ length: clients }, async () => make(zarisPeer(await etcdAdapter({ url: `etcd://${etcd!.url.replace(/^http:\/\//, '')}/bench` })))),
      )
      contenders.push({ label: 'zaris etcd adapter', zaris: true, trial: (i) => handovers(adapterPeers, `lock:handover:adapter:${i}`, rounds, SETTLE_MS) })
      const etcdPeers = Array.from({ length: clients }, () => {
        const c = new Etcd3({ hosts: etcd!.url })
        etcds.push(c)
        return make(etcdLockPeer(c))
      })
      contenders.push({ label: 'etcd3 lock(), waiting on a watch', zaris: false, trial: (i) => handovers(etcdPeers, `lock:handover:etcd:${i}`, rounds, SETTLE_MS) })
    }
    ctx.log(`handover: ${WAITERS} waiters`)
    const rows = await alternate(contenders, ctx.trials, { throughput: false })
    const columns: Record<string, Record<string, string>> = {}
    for (const r of rows) columns[r.contender] = { 'tries/handover': ((r.extra.attempts ?? NaN) / (r.extra.handovers ?? NaN)).toFixed(2) }
    return [
      {
        id: 'handover-8',
        title: `Handover latency, ${WAITERS} waiters`,
        op: `release -> the next waiter holds: one holder and ${WAITERS} waiters, each a client with its own connection, in one process; the line settles ${SETTLE_MS} ms between handovers (zaris node: HTTP to a node process, memory store; Redis adapter and etcd: their own servers)`,
        metric: 'latency',
        rows,
        columns,
        notes: [
          "zaris: waiters stand in line in the store, each with its take parked there; the release hands the lock to the first in line in its own step (node: memory store; Redis: the release's script), and the new holder learns it from its take's answer.",
          'zaris etcd adapter: waiters stand in line in etcd; the first in line watches the lock key and tries again when it is released (etcd runs no code of ours, so the release cannot take for the waiter).',
          'etcd3 lock(): a lease grant, a put-if-absent on the key, the lease revoked to release; etcd3 has no waiting lock, so each waiter watches the key and tries again at every delete (all 8 try; one wins).',
          ...(why ? [`etcd row missing: ${why}`] : []),
        ],
      },
    ]
  } finally {
    await Promise.allSettled(peers.map((p) => p.close()))
    for (const c of conns) c.disconnect()
    for (const c of etcds) c.close()
    await n.stop()
    await server.dispose()
    await etcd?.stop()
  }
}
