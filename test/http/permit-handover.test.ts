/**
 * Semaphores through a node (issue 31): a permit waiter's take goes to the
 * node with its other ways (`orElse`, one per other slot), and a node whose
 * store chooses among ways in one step (memory, `--data`, Redis) parks it
 * there, so a released permit, whatever its slot, goes to the first waiter
 * in line in the release's own step (the node's own store, or the Redis
 * script of a node in front of Redis). A node whose store cannot (etcd)
 * refuses the field: the client drops the capability and waits on watch
 * events as before. Real `zaris serve` processes, real HTTP, real etcd.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Client, type Permit } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { EtcdCluster } from '../etcd/server'
import { RedisServer } from '../redis/server'
import { nodeMetric, until } from '../server/node-metrics'
import { startNode, type NodeProcess } from '../server/node-process'

const nodes: NodeProcess[] = []
const clients: Client[] = []
let etcd: EtcdCluster | undefined
let nsCount = 0

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {})
  await Promise.all(nodes.map((n) => n.stop()))
  await etcd?.dispose()
  await redis?.dispose()
})

function client(node: NodeProcess, ns: string): Client {
  const c = new Client(httpAdapter({ endpoints: [node.url], namespace: ns }))
  clients.push(c)
  return c
}

const metric = (node: NodeProcess, name: string) => nodeMetric(node.url, name)

const acquire = (c: Client, wait = 0) => c.semaphores.acquire('sem:jobs', { limit: 3, ttl: 20_000, wait })

let redis: RedisServer | undefined
/** How each node that takes other ways is started: over its own memory, and stateless over a real Redis. */
const BACKENDS: Record<string, () => Promise<string[]>> = {
  memory: async () => [],
  redis: async () => {
    redis = await new RedisServer().start()
    return ['--redis', `redis://127.0.0.1:${redis.port}/0`]
  },
}

describe.each(Object.keys(BACKENDS))('a node over %s hands a released permit over with other ways', (backend) => {
  let node: NodeProcess
  beforeAll(async () => {
    node = await startNode(['--insecure', ...(await BACKENDS[backend]!())])
    nodes.push(node)
  }, 30_000)

  test('a release of the last slot goes to the first waiter (parked for slot 0) in its own step, the next release to the next waiter', async () => {
    const ns = `permits-${nsCount++}`
    const holder = client(node, ns)
    const held: Permit[] = []
    for (let i = 0; i < 3; i++) held.push((await acquire(holder))!)
    expect(held.every((p) => p !== null)).toBe(true)
    const [b, c] = [client(node, ns), client(node, ns)]
    const retried = await metric(node, 'commits_park_retries_total')
    const first = acquire(b, 10_000)
    await until('b is parked at the node', async () => (await metric(node, 'commits_parked')) === 1)
    const second = acquire(c, 10_000)
    await until('c is parked behind b', async () => (await metric(node, 'commits_parked')) === 2)
    // b's own way is the first slot it saw free as it parked (slot 0 after its read): slot 2 reaches it only as another way.
    expect(await held[2]!.release()).toBe(true)
    const got = (await first)!
    expect(got).not.toBeNull()
    expect(got.token).toBeGreaterThan(held[2]!.token)
    // Through the parked take, in the release's step: the node tried it, b sent nothing more.
    expect(await metric(node, 'commits_park_retries_total')).toBe(retried + 1)
    expect(await metric(node, 'commits_parked')).toBe(1)
    expect(await holder.semaphores.holders('sem:jobs')).toHaveLength(3)
    // The node's hold metrics count the handed-over permit released, not stolen: the take checked its slot free (another way's check).
    expect(await metric(node, 'hold_seconds_count{reason="stolen"}')).toBeNaN()
    expect(await metric(node, 'hold_seconds_count{reason="released"}')).toBeGreaterThanOrEqual(1)
    expect(await held[0]!.release()).toBe(true)
    expect(await second).not.toBeNull()
    expect(await metric(node, 'commits_park_retries_total')).toBe(retried + 2)
    expect(b.adapter.capabilities?.orElse).toBe(true)
  })

  test('a malformed other way is refused with a clear error, and nothing is written', async () => {
    const ns = `permits-${nsCount++}`
    const res = await fetch(`${node.url}/v1/${ns}/commit`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ checks: [{ key: 'a', revision: null }], ops: [{ type: 'set', key: 'a', value: 1 }], waitChange: 100, keepParked: true, orElse: [{ checks: [{ key: 'b' }], ops: [] }] }),
    })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringMatching(/orElse/) } })
    expect(await client(node, ns).get('a')).toBeUndefined()
  })
})

describe('a node over etcd takes no other ways', () => {
  let node: NodeProcess
  beforeAll(async () => {
    etcd = await EtcdCluster.start(1)
    node = await startNode(['--insecure', '--etcd', `etcd://${etcd.members[0]!.endpoint}`])
    nodes.push(node)
  }, 60_000)

  test('it refuses orElse by name; the client drops the capability, and its waiter still gets the freed permit', async () => {
    const ns = `permits-etcd-${nsCount++}`
    const res = await fetch(`${node.url}/v1/${ns}/commit`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ checks: [{ key: 'a', revision: null }], ops: [{ type: 'set', key: 'a', value: 1 }], waitChange: 100, keepParked: true, orElse: [{ checks: [{ key: 'b', revision: null }], ops: [{ type: 'set', key: 'b', value: 1 }] }] }),
    })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringMatching(/orElse: this node's store \(etcd\) takes no other ways/) } })

    const holder = client(node, ns)
    const held: Permit[] = []
    for (let i = 0; i < 3; i++) held.push((await acquire(holder))!)
    const b = client(node, ns)
    expect(b.adapter.capabilities?.orElse).toBe(true)
    const waiting = acquire(b, 15_000)
    await until('b gave other ways up', async () => b.adapter.capabilities?.orElse !== true)
    expect(await held[2]!.release()).toBe(true)
    const got = (await waiting)!
    expect(got).not.toBeNull()
    expect(got.token).toBeGreaterThan(held[2]!.token)
  }, 30_000)
})
