/**
 * The conformance suite, unchanged, on a real Redis Cluster of three masters,
 * through an ioredis `Cluster` the test opens and hands to the adapter. Each
 * namespace keeps all its keys in one slot (its hash tag), so every script
 * runs on one node; different namespaces land on different nodes.
 */
import { Cluster } from 'ioredis'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { Client, type Adapter } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { namespaceKeys } from '../../src/adapters/redis/codec'
import { runConformance } from '../conformance'
import { RedisCluster } from './server'

let cluster: RedisCluster
let shared: Cluster
beforeAll(async () => {
  cluster = await RedisCluster.start(3)
  shared = new Cluster(cluster.startupNodes)
})
afterAll(async () => {
  shared?.disconnect()
  await cluster?.dispose()
})

test('namespaces spread over the nodes; each namespace lives on exactly one', async () => {
  const owners = new Set<number>()
  for (let i = 0; i < 12; i++) {
    const ns = `spread-${i}`
    const adapter = await redisAdapter({ client: shared, namespace: ns })
    await adapter.commit([], [{ type: 'set', key: 'k', value: i, ttl: 60_000 }])
    await adapter.close()
    const holders: number[] = []
    for (const node of cluster.nodes) {
      const keys = (await shared.nodes('master').find((m) => m.options.port === node.port)!.keys(`zaris:{${ns}}:*`)) as string[]
      if (keys.length > 0) holders.push(node.port)
    }
    expect(holders).toHaveLength(1)
    owners.add(holders[0]!)
  }
  expect(owners.size).toBeGreaterThan(1)
})

let n = 0
runConformance('redis cluster', async () => {
  const namespace = `cluster-${++n}-${Math.random().toString(36).slice(2, 8)}`
  const opened: Array<Client | Adapter> = []
  return {
    async connect(options) {
      const client = new Client(await redisAdapter({ client: shared, namespace }), options)
      opened.push(client)
      return client
    },
    async adapter() {
      const adapter = await redisAdapter({ client: shared, namespace })
      opened.push(adapter)
      return adapter
    },
    async close() {
      await Promise.all(opened.map((c) => c.close()))
    },
    // The namespace's keys gone, as its node restarted without persistence; its revision set by hand.
    restart: async () => void (await shared.del(...namespaceKeys(namespace))),
    setRevision: async (revision) => void (await shared.hset(namespaceKeys(namespace)[0]!, 'n', String(revision))),
  }
}, { scale: 0.5 })
