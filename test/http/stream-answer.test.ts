/**
 * A commit parked with its outcome due on a watch stream (`answerOn`, what a
 * page sends: ./stream-answers in the adapter), on the wire, against a real
 * `zaris serve` process: the POST is answered `{ parked: true }` at once,
 * the release's step hands the key over and the outcome comes on the
 * stream; a retry of the request id gets the same outcome; an unknown
 * stream means no wait; a stream that closes drops its parks; the wait's
 * end is told on the stream too. Also on a node in front of a real Redis,
 * which parks on its watch of the store, not in the store.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { RedisServer } from '../redis/server'
import { nodeMetric, until } from '../server/node-metrics'
import { startNode } from '../server/node-process'
import { createHandler, listen, memoryBackend, redisBackend } from 'zaris/server'

let node: { url: string; stop(): Promise<unknown> }
let nsCount = 0

/**
 * A node (memory, or in front of the Redis at `redisUrl`): a `zaris serve`
 * process; with ZARIS_NODE_IN_PROCESS=1 (the mutation run of
 * src/server/calls.ts) the same node served from this process, over the
 * same HTTP, so that a mutant reaches it.
 */
async function serveNode(redisUrl?: string): Promise<typeof node> {
  if (process.env.ZARIS_NODE_IN_PROCESS !== '1') return startNode(redisUrl ? ['--insecure', '--redis', redisUrl] : ['--insecure'])
  const backend = redisUrl ? await redisBackend(redisUrl) : memoryBackend()
  const served = await listen(createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf, log: () => {} }), { port: 0 })
  return { url: served.url, stop: () => served.close().then(() => backend.close()) }
}

beforeAll(async () => {
  node = await serveNode()
}, 30_000)

afterAll(async () => {
  await node?.stop()
})

interface Sse {
  id: string
  /** The `answer` events so far. */
  answers: Array<{ requestId: string; result?: { ok: boolean; revision?: number; failed?: unknown[] }; error?: { code: string } }>
  close(): void
}

/** Opens a filtered watch stream of `ns` on `prefixes` and reads it in the background. */
async function openStream(ns: string, prefixes: string[], base = node.url): Promise<Sse> {
  const stop = new AbortController()
  const res = await fetch(`${base}/v1/${ns}/watch?prefixes=${encodeURIComponent(JSON.stringify(prefixes))}`, { signal: stop.signal })
  expect(res.status).toBe(200)
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  const sse: Sse = { id: '', answers: [], close: () => stop.abort() }
  let ready!: () => void
  const isReady = new Promise<void>((r) => (ready = r))
  void (async () => {
    let buf = ''
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }))
      if (done) return
      buf += value
      for (let end = buf.indexOf('\n\n'); end >= 0; end = buf.indexOf('\n\n')) {
        const block = buf.slice(0, end)
        buf = buf.slice(end + 2)
        const type = /^event: (.*)$/m.exec(block)?.[1]
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (type === 'ready') {
          sse.id = JSON.parse(data!).stream
          ready()
        } else if (type === 'answer') sse.answers.push(JSON.parse(data!))
      }
    }
  })()
  await isReady
  return sse
}

async function post(ns: string, body: object, base = node.url): Promise<{ json: any; replayed: boolean; ms: number }> {
  const t0 = performance.now()
  const res = await fetch(`${base}/v1/${ns}/commit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const json = await res.json()
  expect(res.status, JSON.stringify(json)).toBe(200)
  return { json, replayed: res.headers.get('x-zaris-replayed') === '1', ms: performance.now() - t0 }
}

const metric = (name: string, base = node.url) => nodeMetric(base, name)

const take = (key: string) => ({ checks: [{ key, created: null }], ops: [{ type: 'set', key, value: 'mine', ttl: 20_000 }] })

test('a parked commit is answered { parked: true } at once; the release hands the key over and its outcome comes on the stream, once; a retry gets the same', async () => {
  const ns = `answer-${nsCount++}`
  const held = await post(ns, { ...take('k'), requestId: 'holder-0001' })
  expect(held.json.ok).toBe(true)
  const sse = await openStream(ns, ['k'])
  const waiting = { ...take('k'), requestId: 'waiter-0001', waitChange: 10_000, keepParked: true, answerOn: sse.id }
  const parked = await post(ns, waiting)
  expect(parked.json).toEqual({ parked: true })
  expect(await metric('commits_parked')).toBe(1)
  expect(sse.answers).toEqual([])
  const released = await post(ns, { checks: [{ key: 'k', revision: held.json.revision }], ops: [{ type: 'delete', key: 'k' }], requestId: 'holder-0002' })
  expect(released.json.ok).toBe(true)
  await until('the outcome came on the stream', () => sse.answers.length > 0)
  const told = sse.answers[0]!
  expect(told.requestId).toBe('waiter-0001')
  expect(told.result?.ok).toBe(true)
  // Handed over in the release's step: the very next revision.
  expect(told.result?.revision).toBe(released.json.revision + 1)
  const again = await post(ns, { checks: waiting.checks, ops: waiting.ops, requestId: waiting.requestId })
  expect(again.replayed).toBe(true)
  expect(again.json).toEqual(told.result)
  await new Promise((r) => setTimeout(r, 50))
  expect(sse.answers).toHaveLength(1)
  expect(await metric('commits_parked')).toBe(0)
  sse.close()
})

test('a stream the node does not have (another node\'s, or closed): the commit does not wait', async () => {
  const ns = `answer-${nsCount++}`
  expect((await post(ns, { ...take('k'), requestId: 'holder-0001' })).json.ok).toBe(true)
  const r = await post(ns, { ...take('k'), requestId: 'waiter-0001', waitChange: 5_000, answerOn: 'no-such-stream' })
  expect(r.json.ok).toBe(false)
  expect(r.ms).toBeLessThan(4_000)
  expect(await metric('commits_parked')).toBe(0)
})

test('a stream that closes drops its parked commits: a retry gets the first try\'s failure, and the key freed later is not taken by it', async () => {
  const ns = `answer-${nsCount++}`
  const held = await post(ns, { ...take('k'), requestId: 'holder-0001' })
  const sse = await openStream(ns, ['k'])
  const waiting = { ...take('k'), requestId: 'waiter-0001', waitChange: 10_000, keepParked: true, answerOn: sse.id }
  expect((await post(ns, waiting)).json).toEqual({ parked: true })
  sse.close()
  await until('the park was dropped with its stream', async () => (await metric('commits_parked')) === 0)
  const again = await post(ns, { checks: waiting.checks, ops: waiting.ops, requestId: waiting.requestId })
  expect(again.replayed).toBe(true)
  expect(again.json.ok).toBe(false)
  await post(ns, { checks: [{ key: 'k', revision: held.json.revision }], ops: [{ type: 'delete', key: 'k' }], requestId: 'holder-0002' })
  const after = await fetch(`${node.url}/v1/${ns}/get`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key: 'k' }) })
  expect((await after.json()).entry).toBeNull()
})

test('a wait that runs out is told on the stream too; a stream that keeps being named is bounded like a connection', async () => {
  const ns = `answer-${nsCount++}`
  await post(ns, { ...take('k'), requestId: 'holder-0001' })
  const sse = await openStream(ns, ['k'])
  expect((await post(ns, { ...take('k'), requestId: 'waiter-0001', waitChange: 300, answerOn: sse.id })).json).toEqual({ parked: true })
  await until('the wait ran out', () => sse.answers.length > 0)
  expect(sse.answers[0]).toMatchObject({ requestId: 'waiter-0001', result: { ok: false } })
  // 64 parks per stream (the node's maxPerConnection): the next is answered at once, not parked.
  const parks = await Promise.all(Array.from({ length: 64 }, (_, i) => post(ns, { ...take(`k`), requestId: `many-${String(i).padStart(4, '0')}`, waitChange: 10_000, keepParked: true, answerOn: sse.id })))
  expect(parks.every((p) => p.json.parked === true)).toBe(true)
  const over = await post(ns, { ...take('k'), requestId: 'many-over', waitChange: 10_000, keepParked: true, answerOn: sse.id })
  expect(over.json.ok).toBe(false)
  sse.close()
  await until('the parks ended with the stream', async () => (await metric('commits_parked')) === 0)
})

test('on a node in front of Redis (it parks on its watch of the store): parked at once, the outcome on the stream after the release', async () => {
  const redis = await new RedisServer().start()
  const front = await serveNode(`redis://127.0.0.1:${redis.port}/0`)
  try {
    const ns = `answer-redis-${nsCount++}`
    const held = await post(ns, { ...take('k'), requestId: 'holder-0001' }, front.url)
    expect(held.json.ok).toBe(true)
    const sse = await openStream(ns, ['k'], front.url)
    expect((await post(ns, { ...take('k'), requestId: 'waiter-0001', waitChange: 10_000, keepParked: true, answerOn: sse.id }, front.url)).json).toEqual({ parked: true })
    expect(await metric('commits_parked', front.url)).toBe(1)
    await post(ns, { checks: [{ key: 'k', revision: held.json.revision }], ops: [{ type: 'delete', key: 'k' }], requestId: 'holder-0002' }, front.url)
    await until('the outcome came on the stream', () => sse.answers.length > 0)
    expect(sse.answers[0]).toMatchObject({ requestId: 'waiter-0001', result: { ok: true } })
    sse.close()
  } finally {
    await front.stop()
    await redis.dispose()
  }
}, 30_000)
