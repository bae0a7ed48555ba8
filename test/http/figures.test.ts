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
