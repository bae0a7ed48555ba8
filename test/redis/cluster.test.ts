/**
 * The conformance suite, unchanged, on a real Redis Cluster of three masters,
 * through an ioredis `Cluster` the test opens and hands to the adapter
 * (node-redis's `createCluster`: cluster-node-redis.test.ts). Each namespace
 * keeps all its keys in one slot (its hash tag), so every script runs on one
 * node; different namespaces land on different nodes.
 */
import type { Cluster } from 'ioredis'
import { expect, test } from 'vitest'
import { redisAdapter } from 'zaris/redis'
import type { UserClient } from './clients'
import type { RedisCluster } from './server'
import { clusterConformanceOn } from './suites'

let cluster: RedisCluster
let shared: UserClient
clusterConformanceOn('ioredis', (c, s) => {
  cluster = c
  shared = s
})

test('namespaces spread over the nodes; each namespace lives on exactly one', async () => {
  const ioredis = shared.client as Cluster
  const owners = new Set<number>()
  for (let i = 0; i < 12; i++) {
    const ns = `spread-${i}`
    const adapter = await redisAdapter({ client: ioredis, namespace: ns })
    await adapter.commit([], [{ type: 'set', key: 'k', value: i, ttl: 60_000 }])
    await adapter.close()
    const holders: number[] = []
    for (const node of cluster.nodes) {
      const keys = (await ioredis.nodes('master').find((m) => m.options.port === node.port)!.keys(`zaris:{${ns}}:*`)) as string[]
      if (keys.length > 0) holders.push(node.port)
    }
    expect(holders).toHaveLength(1)
    owners.add(holders[0]!)
  }
  expect(owners.size).toBeGreaterThan(1)
})
