/**
 * The node's call path (src/server/calls.ts) over real HTTP to a node in
 * this process: the routes a POST names, bodies refused with the place
 * named, the content type a cross-site page cannot send without asking,
 * a retried commit's answer marked as replayed, a stream's filter, and other
 * ways refused by a store that cannot choose among them (etcd, a real member).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createHandler, etcdBackend, listen, memoryBackend, redisBackend, type Backend, type Listening } from 'zaris/server'
import { EtcdCluster } from '../etcd/server'
import { RedisServer } from '../redis/server'
import { until } from '../conformance/util'
import { nodeMetric } from './node-metrics'

const served: Array<{ node: Listening; backend: Backend }> = []
let mem: Listening
let nsCount = 0

async function serve(backend: Backend): Promise<Listening> {
  const node = await listen(createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf, log: () => {} }), { port: 0 })
  served.push({ node, backend })
  return node
}

beforeAll(async () => {
  mem = await serve(memoryBackend())
})

afterAll(async () => {
  for (const { node, backend } of served) await node.close().then(() => backend.close())
})

async function post(path: string, body: string | object, type = 'application/json', base = mem.url): Promise<{ status: number; json: any; headers: Headers }> {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': type }, body: typeof body === 'string' ? body : JSON.stringify(body) })
  return { status: res.status, json: await res.json(), headers: res.headers }
}

const ns = () => `calls-${++nsCount}`

/** The id of the watch stream `res` opened, once it is ready. */
async function readyStream(res: Response): Promise<string> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let text = ''
  while (!/event: ready\ndata: (.*)\n/.test(text)) text += (await reader.read()).value ?? ''
  return JSON.parse(/event: ready\ndata: (.*)\n/.exec(text)![1]!).stream as string
}

describe('a POST to the node', () => {
  test('a body that does not fit its route is refused, naming the place: the field, or the body itself', async () => {
    const n = ns()
    for (const op of ['get', 'list', 'commit']) {
      const r = await post(`/v1/${n}/${op}`, '5')
      expect(r.status).toBe(400)
      expect(r.json.error).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^body: /) })
    }
    const field = await post(`/v1/${n}/get`, { key: 5 })
    expect(field.json.error).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^key: /) })
  })

  test('only application/json is read (a cross-site page cannot send it unasked); malformed JSON is refused by name', async () => {
    const n = ns()
    const body = { key: 'k' }
    expect((await post(`/v1/${n}/get`, body, 'application/json; charset=utf-8')).status).toBe(200)
    expect((await post(`/v1/${n}/get`, body, 'APPLICATION/JSON')).status).toBe(200)
    for (const type of ['text/plain', 'application/json-seq', 'x-application/json', 'application/jsonx']) {
      const r = await post(`/v1/${n}/get`, body, type)
      expect(r.status, type).toBe(415)
      expect(r.json.error).toMatchObject({ code: 'UNSUPPORTED', message: 'content-type must be application/json' })
    }
    const bad = await post(`/v1/${n}/get`, '{"key":')
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatchObject({ code: 'INVALID_ARGUMENT', message: 'body: malformed JSON' })
  })

  test("a commit sent again with its request id gets the first answer, marked replayed; the first is not; both are JSON", async () => {
    const n = ns()
    const commit = { checks: [{ key: 'k', revision: null }], ops: [{ type: 'set', key: 'k', value: 1 }], requestId: 'request-1' }
    const first = await post(`/v1/${n}/commit`, commit)
    const again = await post(`/v1/${n}/commit`, commit)
    expect(first.json).toMatchObject({ ok: true })
    expect(again.json).toEqual(first.json)
    expect(first.headers.get('x-zaris-replayed')).toBeNull()
    expect(again.headers.get('x-zaris-replayed')).toBe('1')
    for (const r of [first, again]) expect(r.headers.get('content-type')).toMatch(/^application\/json/)
  })

  test("a commit's seen reaches the store: a store that lost its state answers above what the client saw", async () => {
    const n = ns()
    const r = await post(`/v1/${n}/commit`, { checks: [], ops: [{ type: 'set', key: 'k', value: 1 }], seen: 500 })
    expect(r.json).toMatchObject({ ok: true })
    expect(r.json.revision).toBeGreaterThan(500)
  })

  test('commits applied and commits refused are counted apart at /metrics', async () => {
    const n = ns()
    const before = { ok: await nodeMetric(mem.url, 'commits_total'), no: await nodeMetric(mem.url, 'commit_conflicts_total') }
    expect(Number.isInteger(before.ok) && Number.isInteger(before.no)).toBe(true)
    const take = { checks: [{ key: 'k', revision: null }], ops: [{ type: 'set', key: 'k', value: 1 }] }
    expect((await post(`/v1/${n}/commit`, take)).json).toMatchObject({ ok: true })
    expect((await post(`/v1/${n}/commit`, take)).json).toMatchObject({ ok: false })
    expect((await post(`/v1/${n}/commit`, take)).json).toMatchObject({ ok: false })
    expect(await nodeMetric(mem.url, 'commits_total')).toBe(before.ok + 1)
    expect(await nodeMetric(mem.url, 'commit_conflicts_total')).toBe(before.no + 2)
  })

  test("a permit handed over through an other way ends its holder's hold as released, not stolen (/metrics)", async () => {
    const n = ns()
    const take = (key: string, owner: string) => ({ checks: [{ key, revision: null }], ops: [{ type: 'set', key, value: null, owner, ttl: 60_000 }] })
    const ends = async (reason: string) => (await nodeMetric(mem.url, `hold_seconds_count{reason="${reason}"}`)) || 0
    expect((await post(`/v1/${n}/commit`, take('s1', 'x'))).json).toMatchObject({ ok: true })
    const a = (await post(`/v1/${n}/commit`, take('s2', 'a'))).json
    const before = { stolen: await ends('stolen'), released: await ends('released') }
    const parkedBefore = await nodeMetric(mem.url, 'commits_parked')
    const waiting = post(`/v1/${n}/commit`, { ...take('s1', 'b'), waitChange: 5_000, keepParked: true, orElse: [take('s2', 'b')] })
    await until(async () => (await nodeMetric(mem.url, 'commits_parked')) === parkedBefore + 1)
    expect((await post(`/v1/${n}/commit`, { checks: [{ key: 's2', created: a.revision }], ops: [{ type: 'delete', key: 's2' }] })).json).toMatchObject({ ok: true })
    expect((await waiting).json).toMatchObject({ ok: true, entries: [{ key: 's2', owner: 'b' }] })
    expect(await ends('stolen')).toBe(before.stolen)
    expect(await ends('released')).toBe(before.released + 1)
  })

  test('a commit naming a stream but no request id does not wait: answered at once, as a page never sends it', async () => {
    const n = ns()
    const stop = new AbortController()
    const res = await fetch(`${mem.url}/v1/${n}/watch?prefixes=${encodeURIComponent(JSON.stringify(['k']))}`, { signal: stop.signal })
    try {
      const stream = await readyStream(res)
      const take = { checks: [{ key: 'k', revision: null }], ops: [{ type: 'set', key: 'k', value: 1 }] }
      expect((await post(`/v1/${n}/commit`, take)).json).toMatchObject({ ok: true })
      const t0 = performance.now()
      const r = await post(`/v1/${n}/commit`, { ...take, waitChange: 3_000, keepParked: true, answerOn: stream })
      expect(r.json).toMatchObject({ ok: false })
      expect(performance.now() - t0).toBeLessThan(2_000)
    } finally {
      stop.abort()
    }
  })

  test("a stream's filter is its own route: the prefixes change, the version answered", async () => {
    const n = ns()
    const stop = new AbortController()
    const res = await fetch(`${mem.url}/v1/${n}/watch?prefixes=${encodeURIComponent(JSON.stringify(['a/']))}`, { signal: stop.signal })
    try {
      const stream = await readyStream(res)
      const r = await post(`/v1/${n}/filter`, { stream, version: 1, prefixes: ['b/'] })
      expect(r.status).toBe(200)
      expect(r.json).toMatchObject({ version: 1 })
    } finally {
      stop.abort()
    }
  })
})

describe('a node over etcd (a real member)', () => {
  let etcd: EtcdCluster
  let node: Listening
  beforeAll(async () => {
    etcd = await EtcdCluster.start(1)
    node = await serve(await etcdBackend(`etcd://${etcd.members[0]!.endpoint}`))
  }, 60_000)
  afterAll(async () => {
    await etcd?.dispose()
  })

  test('refuses other ways by name, and applies nothing; the same commit without them goes through', async () => {
    const n = ns()
    const commit = { checks: [{ key: 'a', revision: null }], ops: [{ type: 'set', key: 'a', value: 1 }], waitChange: 100, keepParked: true }
    const refused = await post(`/v1/${n}/commit`, { ...commit, orElse: [{ checks: [{ key: 'b', revision: null }], ops: [{ type: 'set', key: 'b', value: 1 }] }] }, 'application/json', node.url)
    expect(refused.status).toBe(400)
    expect(refused.json.error).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^orElse: this node's store \(etcd\) takes no other ways/) })
    expect((await post(`/v1/${n}/get`, { key: 'a' }, 'application/json', node.url)).json).toMatchObject({ entry: null })
    expect((await post(`/v1/${n}/commit`, commit, 'application/json', node.url)).json).toMatchObject({ ok: true })
  })

  test('a memory node takes the same other ways', async () => {
    const n = ns()
    const r = await post(`/v1/${n}/commit`, {
      checks: [{ key: 'a', revision: null }],
      ops: [{ type: 'set', key: 'a', value: 1 }],
      waitChange: 100,
      keepParked: true,
      orElse: [{ checks: [{ key: 'b', revision: null }], ops: [{ type: 'set', key: 'b', value: 1 }] }],
    })
    expect(r.json).toMatchObject({ ok: true })
  })
})

describe('two nodes in front of one Redis (a real server), as behind a load balancer', () => {
  let redis: RedisServer
  let a: Listening
  let b: Listening
  beforeAll(async () => {
    redis = await new RedisServer().start()
    const url = `redis://127.0.0.1:${redis.port}/0`
    a = await serve(await redisBackend(url))
    b = await serve(await redisBackend(url))
  }, 30_000)
  afterAll(async () => {
    await redis?.dispose()
  })

  test("a commit sent again to the other node is answered from the store's record of its request id, not applied twice", async () => {
    const n = ns()
    const commit = { checks: [{ key: 'k', revision: null }], ops: [{ type: 'set', key: 'k', value: 1 }], requestId: 'request-lb-1' }
    const first = await post(`/v1/${n}/commit`, commit, 'application/json', a.url)
    expect(first.json).toMatchObject({ ok: true })
    // The other node never saw it: its replay cache misses, and the store answers the request id.
    const again = await post(`/v1/${n}/commit`, commit, 'application/json', b.url)
    expect(again.json).toEqual(first.json)
    expect((await post(`/v1/${n}/get`, { key: 'k' }, 'application/json', b.url)).json).toMatchObject({ entry: { revision: first.json.revision } })
  })
})

