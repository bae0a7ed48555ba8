/**
 * zaris/otel on memory, a zaris node (a real process, over HTTP) and Redis
 * (a real redis-server): the wait histogram, holds ended by reason (a steal
 * and a TTL expiry among them) and the acquire span, read from
 * OpenTelemetry's SDK with its in-memory exporters (./scenario.ts).
 */
import { afterAll, beforeAll, test } from 'vitest'
import { connect } from 'zaris'
import { startRedis, type RedisServer } from '../redis/server'
import { startNode, type NodeProcess } from '../server/node-process'
import { otelScenario } from './scenario'

const ns = () => `otel-${Math.random().toString(36).slice(2, 8)}`
let redis: RedisServer
let node: NodeProcess
beforeAll(async () => {
  ;[redis, node] = await Promise.all([startRedis(), startNode()])
}, 60_000)
afterAll(async () => {
  await Promise.all([redis?.dispose(), node?.stop()])
})

test('memory', async () => {
  const name = ns()
  await otelScenario((id, telemetry) => connect(`zaris://inproc/${name}`, { id, telemetry }), 'memory')
})

test('a zaris node', async () => {
  const name = ns()
  await otelScenario((id, telemetry) => connect(`zaris://127.0.0.1:${node.port}/${name}`, { id, telemetry }), 'node')
})

test('Redis', async () => {
  const name = ns()
  await otelScenario((id, telemetry) => connect(redis.url(name), { id, telemetry }), 'redis')
})
