/**
 * The conformance suite, unchanged, against the Redis adapter on a real
 * redis-server (started on a free loopback port for this file), with the
 * store's test hooks: a restart is the namespace's keys gone, as Redis
 * without persistence comes back after a crash; the revision is the `n`
 * field of the namespace's `rev` hash; each namespace keeps 1 000 revisions
 * of history (enough for the suite's 240 racing commits).
 */
import { Redis } from 'ioredis'
import { afterAll, beforeAll } from 'vitest'
import { redisAdapter } from 'zaris/redis'
import { namespaceKeys } from '../../src/adapters/redis/codec'
import { testAdapter } from '../conformance'
import { freePort } from '../server/node-process'
import { startRedis, type RedisServer } from './server'

let server: RedisServer
let raw: Redis
beforeAll(async () => {
  server = await startRedis()
  raw = new Redis({ port: server.port, host: '127.0.0.1', lazyConnect: true })
  await raw.connect()
})
afterAll(async () => {
  raw?.disconnect()
  await server?.dispose()
})

testAdapter('redis', (namespace) => redisAdapter({ url: server.url(namespace), historySize: 1_000 }), {
  historyKept: 1_000,
  restart: async (namespace) => void (await raw.del(...namespaceKeys(namespace))),
  setRevision: async (namespace, revision) => void (await raw.hset(namespaceKeys(namespace)[0]!, 'n', String(revision))),
  unreachable: async () => redisAdapter({ url: `redis://127.0.0.1:${await freePort()}/0?ns=nowhere` }),
})
