/**
 * Waiting commits on every kind of node store: a SQLite node (`--data`), and
 * two nodes in front of one real redis-server (`--redis`) or one real etcd
 * (`--etcd`). On the shared stores the holder talks to one node and the
 * waiter to the other: the parked take is woken by the store's own event of
 * a release that never passed through its node.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { connect, type Client } from 'zaris'
import { EtcdCluster } from '../etcd/server'
import { RedisServer } from '../redis/server'
import { storeDir } from '../setup/store-dir'
import { startNode, type NodeProcess } from './node-process'
import { nodeMetric } from './node-metrics'

const cleanup: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {})
})

async function node(args: string[]): Promise<NodeProcess> {
  const n = await startNode(args)
  cleanup.push(() => n.kill9())
  return n
}

const metric = (n: NodeProcess, name: string) => nodeMetric(n.url, name)

/** The holder on `a`, the waiter on `b`: three handovers by the take parked on `b`. */
async function handovers(a: NodeProcess, b: NodeProcess, ns: string): Promise<void> {
  const holder: Client = await connect(`zaris://127.0.0.1:${a.port}/${ns}`, { id: 'holder' })
  const waiter: Client = await connect(`zaris://127.0.0.1:${b.port}/${ns}`, { id: 'waiter' })
  cleanup.push(() => holder.close(), () => waiter.close())
  for (let round = 0; round < 3; round++) {
    const held = (await holder.locks.acquire('lock:x', { ttl: 20_000 }))!
    const retried = await metric(b, 'commits_park_retries_total')
    const waiting = waiter.locks.acquire('lock:x', { ttl: 20_000, wait: 15_000 })
    const end = Date.now() + 10_000
    while ((await metric(b, 'commits_parked')) !== 1) {
      if (Date.now() > end) throw new Error('the take did not park')
      await new Promise((r) => setTimeout(r, 10))
    }
    await held.release()
    const got = (await waiting)!
    expect(got.token).toBeGreaterThan(held.token)
    expect(await metric(b, 'commits_park_retries_total')).toBe(retried + 1)
    expect((await holder.locks.holder('lock:x'))?.owner).toBe('waiter')
    await got.release()
  }
}

test('a SQLite node (--data): the parked take is handed the lock', async () => {
  const dir = storeDir('zaris-park-')
  cleanup.push(async () => rmSync(dir, { recursive: true, force: true }))
  const n = await node(['--data', join(dir, 'store.db')])
  await handovers(n, n, 'park-sqlite')
}, 60_000)

test('two nodes on one redis-server: the release through one wakes the take parked on the other', async () => {
  const redis = await new RedisServer().start()
  cleanup.push(() => redis.dispose())
  const url = `redis://127.0.0.1:${redis.port}/0`
  await handovers(await node(['--redis', url]), await node(['--redis', url]), 'park-redis')
}, 60_000)

test('two nodes on one etcd: the release through one wakes the take parked on the other', async () => {
  const etcd = await EtcdCluster.start(1)
  cleanup.push(() => etcd.dispose())
  const members = `etcd://${etcd.members.map((m) => m.endpoint).join(',')}`
  await handovers(await node(['--etcd', members]), await node(['--etcd', members]), 'park-etcd')
}, 90_000)
