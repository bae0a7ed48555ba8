/**
 * A commit's other ways (`orElse`) count against a node's bound on parked
 * bytes, as its checks and ops do: a small commit carrying large ways is
 * not parked past the bound (tried once and answered, counted refused), so
 * a peer cannot hold more than the bound in a node's memory by sending
 * its bulk as other ways. A node served in this process with a small bound.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { createHandler, listen, memoryBackend, type Listening } from '../../src/server'
import { nodeMetric } from './node-metrics'

const backend = memoryBackend()
let node: Listening
beforeAll(async () => {
  node = await listen(createHandler({ adapterFor: backend.adapterFor, park: { maxParkedBytes: 20_000 } }), { port: 0, host: '127.0.0.1' })
})
afterAll(async () => {
  await node?.close()
  await backend.close()
})

const post = (body: unknown) => fetch(`${node.url}/v1/bounds/commit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

test('a small commit with 32 large other ways is not parked past the bound; the same commit without them is', async () => {
  expect((await post({ checks: [{ key: 'held', revision: null }], ops: [{ type: 'set', key: 'held', value: 1, owner: 'h' }] })).status).toBe(200)
  const take = { checks: [{ key: 'held', revision: null }], ops: [{ type: 'set', key: 'held', value: 1, owner: 'w' }], waitChange: 300, keepParked: true }
  const way = (i: number) => ({ checks: [{ key: `slot${i}`, revision: 1 }], ops: [{ type: 'set', key: `slot${i}`, value: 'x'.repeat(1_000), owner: 'w' }] })
  const refused0 = await nodeMetric(node.url, 'commits_park_refused_total')
  const big = await post({ ...take, orElse: Array.from({ length: 32 }, (_, i) => way(i)) })
  expect(await big.json()).toMatchObject({ ok: false })
  // Tried once and answered: it never parked.
  expect(await nodeMetric(node.url, 'commits_park_refused_total')).toBe(refused0 + 1)
  // Without the ways it fits, parks, and is answered at its wait's end.
  const t1 = performance.now()
  expect(await (await post(take)).json()).toMatchObject({ ok: false })
  expect(performance.now() - t1).toBeGreaterThanOrEqual(280)
  expect(await nodeMetric(node.url, 'commits_park_refused_total')).toBe(refused0 + 1)
})
