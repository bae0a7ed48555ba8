/**
 * Network faults between a client and a real node process, through a TCP
 * proxy the test controls (test/faults/proxy.ts):
 * - a holder cut off from the node (blackhole, drop, delay): it steps down
 *   by its own deadline before the node can grant the lock to a contender
 *   (both times recorded and compared);
 * - an answer lost after the node applied the request, then retried: no
 *   double grant, no double increment, no doubled write.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Client, connect } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { startNode, type NodeProcess } from '../server/node-process'
import { assertHistory, sharedNow } from './checker'
import { memoryHistory, recordedClient, recordedOps, recordedOver } from './ops'
import { Workspace, sleep, until } from './procs'
import { FaultProxy } from './proxy'
import { count, figure, quantiles, timeout } from './scale'

let node: NodeProcess
let ws: Workspace
const proxies: FaultProxy[] = []
beforeAll(async () => {
  node = await startNode()
  ws = new Workspace()
})
afterAll(async () => {
  await ws?.dispose()
  await Promise.all(proxies.map((p) => p.stop()))
  await node?.kill9()
})

async function proxy(): Promise<FaultProxy> {
  const p = await new FaultProxy(node.port).start()
  proxies.push(p)
  return p
}

describe('a holder cut off from the node', () => {
  const faults = ['blackhole', 'drop', 'delay'] as const
  const runs = count(1, 5)
  for (const fault of faults) {
    test(`${fault}: it steps down by its own deadline, before the contender is granted; ${runs} run(s)`, async () => {
      const ttl = 1_500
      const margins: number[] = []
      for (let run = 0; run < runs; run++) {
        const ns = `cut-${fault}-${run}`
        const p = await proxy()
        // The holder reaches the node only through the proxy; 127.0.0.1 (not localhost) so the Host check passes.
        const holder = ws.spawn({ url: `zaris://127.0.0.1:${p.port}/${ns}`, id: `cut-${fault}-${run}`, mode: 'hold', locks: ['lock:a'], ttl, wait: 10_000, interval: 100, stopAfterRefused: 1 })
        const [, token] = await holder.waitFor(/held (\d+)/)
        await sleep(ttl / 2 + ((run * 97) % 400)) // at least one renewal through the proxy
        const { history, record, operations, sink } = memoryHistory()
        const client = await recordedClient(`zaris://127.0.0.1:${node.port}/${ns}`, `contender-${run}`, sink)
        const ops = recordedOps(client, `contender-${run}`, record)
        const faultAt = sharedNow()
        if (fault === 'blackhole') p.blackhole()
        else if (fault === 'drop') p.drop()
        else p.delay(ttl * 2)
        const lock = await ops.take('lock:a', { ttl: 30_000, wait: 20_000 })
        const grantedAt = sharedNow()
        expect(lock!.token).toBeGreaterThan(Number(token))
        await until(() => holder.history().some((r) => r.type === 'loss'), 20_000, 'the cut-off holder noticing its loss')
        const loss = holder.history().find((r) => r.type === 'loss')!
        // The promise: the holder gave up before the node could give the lock to anyone else.
        expect(loss.at, JSON.stringify(holder.history().slice(-12))).toBeLessThan(grantedAt)
        expect((loss as { reason: string }).reason).toBe('EXPIRED')
        margins.push(grantedAt - loss.at)
        expect(await ops.write(lock!, 0)).toBe('accepted')
        // Heal: whatever the old holder still sends is refused, and it gives up.
        p.heal()
        await holder.exited
        expect(await ops.write(lock!, 1)).toBe('accepted')
        await ops.release(lock!)
        await client.close()
        const h = holder.history()
        assertHistory([...h, ...history], [...holder.operations(), ...operations])
        const late = h.filter((r) => r.type === 'write' && r.invokedAt > faultAt)
        expect(late.every((r) => r.type === 'write' && r.outcome !== 'accepted')).toBe(true)
        console.log(`[${fault}] fault at 0, holder stepped down at +${(loss.at - faultAt).toFixed(0)} ms, contender granted at +${(grantedAt - faultAt).toFixed(0)} ms; the holder's writes after the fault: ${late.map((r) => (r.type === 'write' ? r.outcome : '')).join(' ')}`)
        await p.stop()
      }
      const q = quantiles(margins)
      await figure(`holder cut off by ${fault} (TTL ${ttl} ms): stepped down before the contender was granted`, { runs, margin_min_ms: q.min, margin_p50_ms: q.p50 })
    }, timeout(40_000, 300_000))
  }
})

describe('an answer lost after the node applied the request', () => {
  const runs = count(3, 50)

  /** A client that reaches the node through `p`, with the node:http transport (one keep-alive connection). */
  const through = (p: FaultProxy, ns: string, id: string) => new Client(httpAdapter({ endpoints: [p.url], namespace: ns }), { id })

  async function replays(): Promise<number> {
    const text = await (await fetch(`${node.url}/metrics`)).text()
    return Number(/^zaris_commit_replays_total (\d+)/m.exec(text)?.[1] ?? NaN)
  }

  test(`an increment retried after its answer was lost counts once; ${runs} times`, async () => {
    const p = await proxy()
    const ns = 'lost-counter'
    const client = through(p, ns, 'counter')
    const direct = await connect(`zaris://127.0.0.1:${node.port}/${ns}`)
    const before = await replays()
    for (let i = 1; i <= runs; i++) {
      p.holdReplies('/commit')
      const pending = client.counters.increment('jobs')
      await until(async () => (await direct.counters.get('jobs')) === i, 10_000, `increment ${i} reaching the node`)
      p.cut() // the client never got the answer; it retries with the same request id
      p.pass()
      expect(await pending).toBe(i)
      expect(await direct.counters.get('jobs')).toBe(i)
    }
    expect(await replays()).toBeGreaterThanOrEqual(before + runs)
    await client.close()
    await direct.close()
  }, timeout(30_000, 120_000))

  test(`an acquire retried after its answer was lost grants the lock once, to its caller; ${runs} times`, async () => {
    const p = await proxy()
    const ns = 'lost-acquire'
    const { history, record, operations, sink } = memoryHistory()
    const client = recordedOver(httpAdapter({ endpoints: [p.url], namespace: ns }), 'taker', sink)
    const direct = await recordedClient(`zaris://127.0.0.1:${node.port}/${ns}`, 'other', sink)
    const ops = recordedOps(client, 'taker', record)
    const other = recordedOps(direct, 'other', record)
    for (let i = 0; i < runs; i++) {
      p.holdReplies('/commit')
      const pending = ops.take('lock:a', { ttl: 30_000, wait: 0 })
      await until(async () => (await direct.locks.holder('lock:a')) !== undefined, 10_000, 'the acquire reaching the node')
      const held = await direct.locks.holder('lock:a')
      p.cut()
      p.pass()
      const lock = await pending
      // Without request ids the retry would find the lock taken (by itself) and give up: a lock held by no one.
      expect(lock, 'the retried acquire got the lock it had been granted').toBeDefined()
      expect(lock!.token).toBe(held!.token)
      expect(held!.owner).toBe('taker')
      expect(await other.take('lock:a', { ttl: 1_000, wait: 0 })).toBeUndefined()
      // A fenced write whose answer is lost is not applied twice either.
      const rev = (await direct.put('probe', i)).revision
      p.holdReplies('/commit')
      const written = ops.write(lock!, i)
      await until(async () => (await direct.get('res:a'))?.revision === rev + 1, 10_000, 'the write reaching the node')
      p.cut()
      p.pass()
      expect(await written).toBe('accepted')
      expect((await direct.put('probe', i)).revision).toBe(rev + 2)
      await ops.release(lock!)
    }
    assertHistory(history, operations)
    await client.close()
    await direct.close()
  }, timeout(30_000, 120_000))
})

afterAll(async () => {
  const all = proxies.reduce((n, p) => n + p.dropped, 0)
  await figure('network faults: bytes the proxies threw away', { bytes: all })
})
