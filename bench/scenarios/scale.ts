/**
 * Scale: the cost of one acquire + release while 10, 10 000 or 100 000
 * other keys sit in the same store (half of them with a TTL, so the expiry
 * index is as full as the map). The in-process memory store, and a `--data`
 * node (one node process and SQLite file per size).
 *
 * @module
 */
import { join } from 'node:path'
import type { Adapter, Op } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { memoryAdapter } from 'zaris/memory'
import { alternate, type Contender } from '../lib/compare'
import { oneClient, zarisPeer } from '../lib/locks'
import type { Scenario } from '../lib/report'
import { fmtRatio } from '../lib/report'
import { node, tempDir } from '../lib/procs'
import type { NodeProcess } from '../../test/server/node-process'
import type { BenchContext } from './context'

const SIZES = [10, 10_000, 100_000]
const label = (n: number) => `${n >= 1000 ? `${n / 1000}k` : n} other keys`

/** Writes `count` other keys, 1 000 per commit (the node's limit per commit). */
async function fill(adapter: Adapter, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1000) {
    const ops: Op[] = []
    for (let j = i; j < Math.min(count, i + 1000); j++) {
      ops.push(j % 2 ? { type: 'set', key: `other:${j}`, value: `v${j}` } : { type: 'set', key: `other:${j}`, value: `v${j}`, ttl: 3_600_000 })
    }
    const r = await adapter.commit([], ops)
    if (!r.ok) throw new Error('filling the store failed')
  }
}

function scenario(id: string, title: string, rows: Scenario['rows']): Scenario {
  const base = rows.find((r) => r.contender === label(SIZES[0]!))
  const columns: Record<string, Record<string, string>> = {}
  // The per-op cost is the median latency: on a loaded machine the mean (and so ops/s) follows descheduling and GC pauses more than the store.
  for (const r of rows) columns[r.contender] = { 'p50 vs 10 keys': base ? fmtRatio(r.p50 / base.p50) : '—' }
  return {
    id,
    title,
    op: 'acquire + release of one lock while N other keys are in the store (half with a TTL)',
    metric: 'latency',
    rows,
    columns,
  }
}

export async function scaleScenarios(ctx: BenchContext): Promise<Scenario[]> {
  const dur = ctx.quick ? 150 : 400
  ctx.log('scale: memory')
  const memory = await Promise.all(
    SIZES.map(async (n) => {
      const adapter = memoryAdapter({ namespace: `bench-scale-${n}` })
      await fill(adapter, n)
      return zarisPeer(adapter)
    }),
  )
  let memRows: Scenario['rows']
  try {
    memRows = await alternate(
      SIZES.map<Contender>((n, i) => ({ label: label(n), zaris: true, trial: () => oneClient(memory[i]!, 'lock:scale', dur) })),
      ctx.trials,
    )
  } finally {
    await Promise.all(memory.map((p) => p.close()))
  }

  ctx.log('scale: --data node')
  const dir = tempDir('zaris-bench-scale-')
  const nodes: NodeProcess[] = []
  try {
    for (const n of SIZES) nodes.push(await node(['--data', join(dir.path, `scale-${n}.db`), '--max-body', String(1 << 20)]))
    const peers = await Promise.all(
      SIZES.map(async (n, i) => {
        const adapter = httpAdapter({ endpoints: [nodes[i]!.url], namespace: 'bench' })
        await fill(adapter, n)
        return zarisPeer(adapter)
      }),
    )
    const dataRows = await alternate(
      SIZES.map<Contender>((n, i) => ({ label: label(n), zaris: true, trial: () => oneClient(peers[i]!, 'lock:scale', ctx.quick ? 250 : 500) })),
      ctx.trials,
    )
    await Promise.all(peers.map((p) => p.close()))
    return [scenario('scale-memory', 'Scale: memory store', memRows), scenario('scale-data', 'Scale: --data node', dataRows)]
  } finally {
    for (const n of nodes) await n.stop()
    dir.remove()
  }
}
