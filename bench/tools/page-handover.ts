/**
 * A lock handed over between two clients of one real Chromium page on a real
 * node: the time from the holder's `release()` call to the waiter holding,
 * p50/p90 over N handovers, and whether the waiter's take was parked at the
 * node (its outcome then comes on the page's watch stream: `answerOn`).
 *
 *   npx tsx bench/tools/page-handover.ts [handovers=40]
 */
import { openHarnessTab, startHarness } from '../../test/browser-harness/server'
import { startNode } from '../../test/server/node-process'

const n = Number(process.argv[2] ?? 40)
const harness = await startHarness()
const node = await startNode(['--cors', new URL(harness.url).origin])
try {
  const ctx = await harness.browser.newContext()
  const page = await openHarnessTab(ctx, harness.url)
    const times = await page.evaluate(
    async ({ port, n }) => {
      const url = `zaris://127.0.0.1:${port}/handover-${Date.now()}`
      const [a, b] = [await window.zaris.connect(url, { id: 'a' }), await window.zaris.connect(url, { id: 'b' })]
      const out: number[] = []
      for (let i = 0; i < n; i++) {
        const held = (await a.locks.acquire('lock:h', { ttl: 20_000 }))!
        const waiting = b.locks.acquire('lock:h', { ttl: 20_000, wait: 10_000 })
        await new Promise((r) => setTimeout(r, 60)) // the waiter in line and its take sent
        const t0 = performance.now()
        void held.release()
        const got = (await waiting)!
        out.push(performance.now() - t0)
        await got.release()
      }
      await a.close()
      await b.close()
      return out
    },
    { port: node.port, n },
  )
  const metrics = await (await fetch(`${node.url}/metrics`)).text()
  const parked = Number(/^zaris_commits_parked_total (\d+)$/m.exec(metrics)?.[1])
  const sorted = times.slice(1).sort((x, y) => x - y)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2)
  console.log(`one page, ${sorted.length} handovers through a node: p50 ${at(0.5)} ms, p90 ${at(0.9)} ms; takes parked at the node: ${parked}`)
  await ctx.close()
} finally {
  await node.stop()
  await harness.close()
}
