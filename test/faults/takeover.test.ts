/**
 * Takeover after a clean release, per adapter: one client releases, another
 * that was already waiting gets the lock; the time between the release call
 * and the grant is reported (p50/p99), never asserted. The in-process store,
 * a node process over HTTP and a real redis-server; IndexedDB's figure comes
 * from test/faults/tabs.test.ts, the kill -9 figure from holder.test.ts.
 */
import { afterAll, expect, test } from 'vitest'
import { connect, type Client } from 'zaris'
import { RedisServer } from '../redis/server'
import { startNode, type NodeProcess } from '../server/node-process'
import { sleep } from './procs'
import { count, figure, quantiles, timeout } from './scale'

let node: NodeProcess | undefined
let redis: RedisServer | undefined
afterAll(async () => {
  await node?.kill9()
  await redis?.dispose()
})

/** Releases from one client to a waiting other, `n` times; resolves the takeover times in ms. */
async function handovers(a: Client, b: Client, n: number): Promise<number[]> {
  const out: number[] = []
  let [holder, waiter] = [a, b]
  let last = 0
  for (let i = 0; i < n; i++) {
    const lock = (await holder.locks.acquire('lock:handover', { ttl: 30_000, wait: 10_000 }))!
    expect(lock.token).toBeGreaterThan(last)
    const waiting = waiter.locks.acquire('lock:handover', { ttl: 30_000, wait: 10_000 }).then((l) => ({ l, at: performance.now() }))
    await sleep(15) // the waiter has tried once and is waiting
    const released = performance.now()
    await lock.release()
    const { l, at } = await waiting
    expect(l!.token).toBeGreaterThan(lock.token)
    out.push(at - released)
    last = l!.token
    await l!.release()
    ;[holder, waiter] = [waiter, holder]
  }
  return out
}

const n = count(30, 300)

test(`takeover after a clean release, per adapter (${n} handovers each)`, async () => {
  node = await startNode()
  redis = await new RedisServer().start()
  const stores = {
    memory: 'zaris://inproc/takeover',
    'http node': `zaris://127.0.0.1:${node.port}/takeover`,
    redis: redis.url('takeover'),
  }
  for (const [name, url] of Object.entries(stores)) {
    const [a, b] = [await connect(url, { id: 'a' }), await connect(url, { id: 'b' })]
    const q = quantiles(await handovers(a, b, n))
    await figure(`takeover after a clean release: ${name}`, { handovers: n, p50_ms: q.p50, p99_ms: q.p99, max_ms: q.max })
    await a.close()
    await b.close()
  }
}, timeout(60_000, 300_000))
