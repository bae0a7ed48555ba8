/**
 * Suites that run once per client library, each file calling one for its
 * library (so vitest spreads them over its workers).
 */
import { afterAll, beforeAll } from 'vitest'
import { Client, type Adapter } from 'zaris'
import { redisAdapter, type RedisLibrary } from 'zaris/redis'
import { runConformance, testAdapter } from '../conformance'
import { named, userCluster, using, type UserClient } from './clients'
import { RedisCluster, startRedis, type RedisServer } from './server'

/** The conformance suite on a redis-server of its own, through URLs that open their connections with `library`. */
export function conformanceOn(library: RedisLibrary): void {
  let server: RedisServer
  beforeAll(async () => {
    server = await startRedis()
  })
  afterAll(async () => {
    await server?.dispose()
  })
  testAdapter(`redis (${named(library)})`, (namespace) => redisAdapter({ url: using(server.url(namespace), library) }))
}

/**
 * The conformance suite on a Redis Cluster of three masters, through a
 * cluster client of `library` the test opens and hands to the adapter (an
 * ioredis `Cluster`, or node-redis's `createCluster`). Each namespace keeps
 * all its keys in one slot (its hash tag), so every script runs on one node;
 * different namespaces land on different nodes. `started` gets the cluster
 * and the client, for tests of the file's own.
 */
export function clusterConformanceOn(library: 'ioredis' | 'redis', started?: (cluster: RedisCluster, client: UserClient) => void): void {
  let cluster: RedisCluster
  let shared: UserClient
  beforeAll(async () => {
    cluster = await RedisCluster.start(3)
    shared = await userCluster(library, cluster.startupNodes)
    started?.(cluster, shared)
  })
  afterAll(async () => {
    await shared?.close().catch(() => {})
    await cluster?.dispose()
  })
  let n = 0
  runConformance(`redis cluster (${named(library)})`, async () => {
    const namespace = `cluster-${++n}-${Math.random().toString(36).slice(2, 8)}`
    const opened: Array<Client | Adapter> = []
    return {
      async connect(options) {
        const client = new Client(await redisAdapter({ client: shared.client, namespace }), options)
        opened.push(client)
        return client
      },
      async adapter() {
        const adapter = await redisAdapter({ client: shared.client, namespace })
        opened.push(adapter)
        return adapter
      },
      async close() {
        await Promise.all(opened.map((c) => c.close()))
      },
    }
  }, { scale: 0.5 })
}
