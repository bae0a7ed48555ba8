/**
 * The model-based random test (test/model/scenario.ts) on the Redis adapter
 * against a real redis-server, over each client library (ioredis and
 * node-redis in `npm test`, iovalkey too in `npm run test:faults`). Real
 * time; fast-check's scheduler reorders the clients' store calls. A few runs
 * in `npm test`, `ZARIS_FAULT_SCALE` x 40 in `npm run test:faults`.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { redisAdapter } from 'zaris/redis'
import { count, figure, timeout } from '../faults/scale'
import { HEAVY_LIBRARIES, named, using } from '../redis/clients'
import { startRedis, type RedisServer } from '../redis/server'
import { assertScenarios, realEnvironment, realScenarios } from './scenario'

const runs = count(3, 40)
let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(async () => {
  await server?.dispose()
})

for (const library of HEAVY_LIBRARIES) test(`redis (${named(library)}): ${runs} random scenarios and ${runs} hold races: linearizable, and every hold's signal right`, async () => {
  const adapter = (ns: string) => () => redisAdapter({ url: using(server.url(`${ns}-${library}`), library) })
  const r = await assertScenarios(runs, realScenarios(), (scheduler, run) => realEnvironment(adapter(`model-${run}`), scheduler), 'r')
  const h = await assertScenarios(runs, realScenarios(true), (scheduler, run) => realEnvironment(adapter(`race-${run}`), scheduler), 'h')
  expect(r.operations + h.operations).toBeGreaterThan(runs * 5)
  await figure(`model test, redis (${named(library)})`, { runs: r.runs + h.runs, operations: r.operations + h.operations, seconds: (r.ms + h.ms) / 1000 })
}, timeout(120_000, 1_200_000))
