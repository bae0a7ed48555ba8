/**
 * The conformance suite, unchanged, against the Redis adapter on a real
 * redis-server (started on a free loopback port for this file).
 */
import { afterAll, beforeAll } from 'vitest'
import { connect, type Adapter, type Client } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { runConformance } from '../conformance'
import { startRedis, type RedisServer } from './server'

let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(async () => {
  await server?.dispose()
})

let n = 0
runConformance('redis', async () => {
  const namespace = `conformance-${++n}-${Math.random().toString(36).slice(2, 8)}`
  const opened: Array<Client | Adapter> = []
  return {
    async connect(options) {
      const client = await connect(server.url(namespace), { ...options })
      opened.push(client)
      return client
    },
    async adapter() {
      const adapter = await redisAdapter({ url: server.url(namespace) })
      opened.push(adapter)
      return adapter
    },
    async close() {
      await Promise.all(opened.map((c) => c.close()))
    },
  }
})
