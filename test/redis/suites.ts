/**
 * Suites that run once per client library, each file calling one for its
 * library (so vitest spreads them over its workers).
 */
import { Cluster as IoredisCluster, Redis as Ioredis } from 'ioredis'
import { afterAll, beforeAll } from 'vitest'
import { Client, type Adapter } from 'zaris'
import { redisAdapter, type RedisLibrary } from 'zaris/redis'
import { namespaceKeys } from '../../src/adapters/redis/codec'
import { runConformance, testAdapter } from '../conformance'
import { freePort } from '../server/node-process'
import { named, userCluster, using, type UserClient } from './clients'
import { RedisCluster, startRedis, type RedisServer } from './server'

/**
 * The conformance suite on a redis-server of its own, through URLs that open
 * their connections with `library`, with the store's test hooks: a restart is
 * the namespace's keys gone, as Redis without persistence comes back after a
 * crash; the revision is the `n` field of the namespace's `rev` hash; each
 * namespace keeps 1 000 revisions of history (enough for the suite's 240
 * racing commits). The hooks' own connection is ioredis whatever `library` is.
 */
export function conformanceOn(library: RedisLibrary): void {
  let server: RedisServer
  let raw: Ioredis
  beforeAll(async () => {
    server = await startRedis()
    raw = new Ioredis({ port: server.port, host: '127.0.0.1', lazyConnect: true })
    await raw.connect()
  })
  afterAll(async () => {
    raw?.disconnect()
    await server?.dispose()
  })
  testAdapter(`redis (${named(library)})`, (namespace) => redisAdapter({ url: using(server.url(namespace), library), historySize: 1_000 }), {
    historyKept: 1_000,
    restart: async (namespace) => void (await raw.del(...namespaceKeys(namespace))),
    setRevision: async (namespace, revision) => void (await raw.hset(namespaceKeys(namespace)[0]!, 'n', String(revision))),
    unreachable: async () => redisAdapter({ url: using(`redis://127.0.0.1:${await freePort()}/0?ns=nowhere`, library) }),
  })
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
  let raw: IoredisCluster // the test hooks' own connection
  beforeAll(async () => {
    cluster = await RedisCluster.start(3)
    shared = await userCluster(library, cluster.startupNodes)
    raw = new IoredisCluster(cluster.startupNodes)
    started?.(cluster, shared)
  })
  afterAll(async () => {
    raw?.disconnect()
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
      // The namespace's keys gone, as its node restarted without persistence; its revision set by hand.
      restart: async () => void (await raw.del(...namespaceKeys(namespace))),
      setRevision: async (revision) => void (await raw.hset(namespaceKeys(namespace)[0]!, 'n', String(revision))),
    }
  }, { scale: 0.5 })
}
