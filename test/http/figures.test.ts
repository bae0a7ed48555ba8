/**
 * Figures for the README, printed, never asserted on: round trips through a
 * node process with each transport, a durable (--data) commit, a lock
 * acquire+release, and how soon a watcher sees a put.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { Client } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { startNode, type NodeProcess } from '../server/node-process'

const dir = mkdtempSync(join(tmpdir(), 'zaris-fig-'))
const nodes: NodeProcess[] = []
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
  rmSync(dir, { recursive: true, force: true })
})

function stats(samples: number[]): string {
  const s = [...samples].sort((a, b) => a - b)
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!
  return `median ${at(0.5).toFixed(2)} ms, p95 ${at(0.95).toFixed(2)} ms`
}

async function time(n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 20; i++) await fn(i) // warm up
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await fn(i)
    out.push(performance.now() - t)
  }
  return out
}

test('figures: round trips, durable commits, locks and watch latency through a node process', async () => {
  const memory = await startNode()
  const data = await startNode(['--data', join(dir, 'fig.db')])
  nodes.push(memory, data)
  const lines: string[] = []
  for (const transport of ['node', 'fetch'] as const) {
    const client = new Client(httpAdapter({ endpoints: [memory.url], namespace: `fig-${transport}`, transport }))
    const gets = await time(300, () => client.get('k'))
    const puts = await time(300, (i) => client.put('k', i))
    const locks = await time(100, async () => (await client.locks.acquire('lock:fig', { autoRenew: false }))!.release())
    lines.push(`${transport === 'node' ? 'node:http keep-alive' : 'fetch'}: get ${stats(gets)}; put ${stats(puts)}; acquire+release ${stats(locks)}`)
    await client.close()
  }
  const durable = new Client(httpAdapter({ endpoints: [data.url], namespace: 'fig' }))
  lines.push(`--data (SQLite, synchronous=FULL): put ${stats(await time(200, (i) => durable.put('k', i)))}`)
  await durable.close()

  const writer = new Client(httpAdapter({ endpoints: [memory.url], namespace: 'fig-watch' }))
  const watcher = new Client(httpAdapter({ endpoints: [memory.url], namespace: 'fig-watch' }))
  const watch = watcher.watch('w')
  await watch.ready
  const seen = await time(100, async (i) => {
    await writer.put('w', i)
    const ev = await watch.next()
    expect(ev.value?.value).toBe(i)
  })
  lines.push(`put + the watcher seeing it: ${stats(seen)}`)
  await writer.close()
  await watcher.close()
  console.log(lines.map((l) => `[figure] ${l}`).join('\n'))
}, 120_000)

/**
 * One lock, 20 clients (each its own adapter, as 20 processes would have)
 * waiting on it: how long from a holder's release until the next holder has
 * it, how many requests each acquisition cost, and how many watch streams
 * the node had open meanwhile.
 */
async function handovers(url: string, namespace: string, contenders: number, rounds: number): Promise<{ samples: number[]; streams: number; total: number; requests: Record<string, number> }> {
  const clients = Array.from({ length: contenders }, () => new Client(httpAdapter({ endpoints: [url], namespace })))
  let releasedAt: number | undefined
  let streams = 0
  const samples: number[] = []
  const before = await requestsOf(url)
  const started = performance.now()
  const sampler = setInterval(() => {
    void metricOf(url, 'zaris_watchers').then((n) => (streams = Math.max(streams, n)), () => {})
  }, 50)
  await Promise.all(clients.map(async (c) => {
    for (let r = 0; r < rounds; r++) {
      const lock = await c.locks.acquire('lock:handover', { ttl: 30_000, wait: 60_000, autoRenew: false })
      if (!lock) throw new Error('wait ran out')
      if (releasedAt !== undefined) samples.push(performance.now() - releasedAt)
      releasedAt = performance.now()
      await lock.release()
    }
  }))
  const total = performance.now() - started
  clearInterval(sampler)
  await Promise.all(clients.map((c) => c.close()))
  const after = await requestsOf(url)
  const requests: Record<string, number> = {}
  for (const [route, n] of Object.entries(after)) requests[route] = (n - (before[route] ?? 0)) / (contenders * rounds)
  return { samples, streams, total, requests }
}

/** Requests the node answered so far, by route. */
async function requestsOf(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const out: Record<string, number> = {}
  for (const m of text.matchAll(/^zaris_requests_total\{route="(\w+)",status="\d+"\} (\d+)$/gm)) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2])
  return out
}

async function metricOf(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN)
}

test('figures: lock handover with 20 contenders, memory and --data nodes', async () => {
  const memory = await startNode()
  const data = await startNode(['--data', join(dir, 'handover.db')])
  nodes.push(memory, data)
  const lines: string[] = []
  for (const [name, n] of [['memory', memory], ['--data', data]] as const) {
    const h = await handovers(n.url, `handover`, 20, 10)
    expect(h.samples.length).toBe(20 * 10 - 1)
    const per = (route: string) => (h.requests[route] ?? 0).toFixed(1)
    lines.push(
      `${name} node, 20 contenders x 10 rounds: handover ${stats(h.samples)}; ${(h.total / (20 * 10)).toFixed(1)} ms per acquire overall; ` +
        `per acquire ${per('commit')} commits, ${per('watch')} watch streams opened, ${per('events')} history requests; up to ${h.streams} streams open`,
    )
  }
  console.log(lines.map((l) => `[figure] ${l}`).join('\n'))
}, 120_000)
