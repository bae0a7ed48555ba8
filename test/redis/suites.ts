/**
 * Suites that run once per client library, each file calling one for its
 * library (so vitest spreads them over its workers).
 */
import { afterAll, beforeAll } from 'vitest'
import { redisAdapter, type RedisLibrary } from 'zaris/redis'
import { testAdapter } from '../conformance'
import { named, using } from './clients'
import { startRedis, type RedisServer } from './server'

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
