/**
 * The conformance suite, unchanged, against the Redis adapter on a real
 * redis-server (started on a free loopback port for this file).
 */
import { afterAll, beforeAll } from 'vitest'
import { redisAdapter } from 'zaris/redis'
import { testAdapter } from '../conformance'
import { startRedis, type RedisServer } from './server'

let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(async () => {
  await server?.dispose()
})

testAdapter('redis', (namespace) => redisAdapter({ url: server.url(namespace) }))
