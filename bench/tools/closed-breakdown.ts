/**
 * Where "holder tab closed -> next holder" goes for zaris on IndexedDB: when
 * the closed tab's liveness Web Lock is free (a second, independent request
 * for it in the waiting tab stamps that), and when the zaris waiter holds.
 * Times from `page.close()`, on one clock.
 *
 *   npx tsx bench/tools/closed-breakdown.ts
 *
 * @module
 */
import { startBrowser } from '../browser/driver'
import { absNow, median } from '../lib/measure'

const b = await startBrowser()
try {
  const ns = 'cb'
  const w = await b.tab()
  await w.page.evaluate((ns) => window.bench.ready(ns), ns)
  const free: number[] = []
  const held: number[] = []
  for (let i = 0; i < 10; i++) {
    const key = `k${i}`
    const h = await b.tab()
    await h.page.evaluate(([ns, key]) => window.bench.hold('zaris', ns, key), [ns, key] as const)
    await w.page.evaluate(([ns, key]) => window.bench.wait('zaris', ns, key, 30), [ns, key] as const)
    await w.page.evaluate(async ([ns, key]) => {
      const c = await window.bench.client(ns)
      const owner = (await c.locks.holder(key))!.owner
      const g = window as unknown as { freeAt: Promise<number> }
      g.freeAt = new Promise((resolve) => void navigator.locks.request(`zaris:${ns}:owner:${owner}`, { mode: 'exclusive' }, async () => resolve(window.bench.absNow())))
    }, [ns, key] as const)
    const t0 = absNow()
    await h.close()
    const t1 = await w.page.evaluate(() => window.bench.waited())
    const f = await w.page.evaluate(() => (window as unknown as { freeAt: Promise<number> }).freeAt)
    await w.page.evaluate(() => window.bench.release())
    free.push(f - w.offset - t0)
    held.push(t1 - w.offset - t0)
  }
  console.log(`page.close -> liveness Web Lock free: median ${median(free).toFixed(1)} ms`)
  console.log(`page.close -> zaris waiter holds:      median ${median(held).toFixed(1)} ms`)
  console.log(`samples free: ${free.map((x) => x.toFixed(0)).join(' ')}`)
  console.log(`samples held: ${held.map((x) => x.toFixed(0)).join(' ')}`)
} finally {
  await b.close()
}
