/**
 * zaris/otel on memory, a zaris node (a real process, over HTTP) and Redis
 * (a real redis-server): the wait histogram, holds ended by reason (a steal
 * and a TTL expiry among them) and the acquire span, read from
 * OpenTelemetry's SDK with its in-memory exporters (./scenario.ts); and a
 * watch's lag, and its reconnects when the connection to the node or Redis
 * is cut (./watch.ts).
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { connect } from 'zaris'
import { startRedis, type RedisServer } from '../redis/server'
import { TcpProxy } from '../redis/proxy'
import { startNode, type NodeProcess } from '../server/node-process'
import { otelScenario } from './scenario'
import { watchScenario } from './watch'

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

test("a zaris node, and the node's own /metrics: the same waits and holds, as its commits show them", async () => {
  const name = ns()
  await otelScenario((id, telemetry) => connect(`zaris://127.0.0.1:${node.port}/${name}`, { id, telemetry }), 'node')
  const text = await (await fetch(`${node.url}/metrics`)).text()
  const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN)
  // Holds: five released (two locks, the thief's, the lease, the term), the steal, the TTL that ran out (counted at this scrape).
  // Five released; since the node hands a lock over in the release's own step (issue 31), one of them
  // may be read from the commits as lost (docs/observability.md says so): seven ended in all.
  const released = value('zaris_hold_seconds_count{reason="released"}')
  expect(released).toBeGreaterThanOrEqual(4)
  expect(released + (value('zaris_hold_seconds_count{reason="lost"}') || 0)).toBe(5)
  expect(value('zaris_hold_seconds_count{reason="stolen"}')).toBe(1)
  expect(value('zaris_hold_seconds_count{reason="expired"}')).toBe(1)
  expect(value('zaris_hold_seconds_sum{reason="expired"}')).toBeGreaterThanOrEqual(0.2)
  // Waits: every hold taken (the thief's steal among them); the waiter that stood in line ~200 ms; the two that left the line.
  expect(value('zaris_acquire_wait_seconds_count{outcome="held"}')).toBe(7)
  expect(value('zaris_acquire_wait_seconds_count{outcome="held"}') - value('zaris_acquire_wait_seconds_bucket{outcome="held",le="0.1"}')).toBeGreaterThanOrEqual(1)
  expect(value('zaris_acquire_wait_seconds_count{outcome="gave_up"}')).toBe(2)
})

test('Redis', async () => {
  const name = ns()
  await otelScenario((id, telemetry) => connect(redis.url(name), { id, telemetry }), 'redis')
})

test('watch lag on memory (no connection to break)', async () => {
  const name = ns()
  await watchScenario((telemetry) => connect(`zaris://inproc/${name}`, { telemetry }), 'memory')
})

test('watch lag and a reconnect, through a zaris node whose connections are cut', async () => {
  const proxy = await new TcpProxy(node.port).start()
  try {
    const name = ns()
    await watchScenario((telemetry) => connect(`zaris://127.0.0.1:${proxy.port}/${name}`, { telemetry }), 'node', () => proxy.cut())
  } finally {
    await proxy.stop()
  }
})

test('watch lag and a reconnect on Redis, its connections cut', async () => {
  const proxy = await new TcpProxy(redis.port).start()
  try {
    const name = ns()
    await watchScenario((telemetry) => connect(proxy.url(name), { telemetry }), 'redis', () => proxy.cut())
  } finally {
    await proxy.stop()
  }
})
