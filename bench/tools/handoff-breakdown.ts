/**
 * Where a cross-tab zaris handoff goes: the holder's release (its commit),
 * the BroadcastChannel announcement reaching the waiting tab, and the
 * waiter's own winning commit. Times are taken in the pages and put on one
 * clock with the driver's per-tab offsets.
 *
 *   npx tsx bench/tools/handoff-breakdown.ts
 *
 * @module
 */
import { startBrowser } from '../browser/driver'
import { median } from '../lib/measure'

const b = await startBrowser()
try {
  const [a, w] = [await b.tab(), await b.tab()]
  const ns = 'hb'
  for (const t of [a, w]) await t.page.evaluate((ns) => window.bench.ready(ns), ns)
  // A second listener on the adapter's own channel in the waiting tab stamps each announcement.
  await w.page.evaluate((ns) => {
    const c = new BroadcastChannel(`zaris:idb:${ns}`)
    const g = window as unknown as { heard: number[] }
    g.heard = []
    c.onmessage = () => g.heard.push(window.bench.absNow())
  }, ns)
  const parts: Record<string, number[]> = { 'release call -> release resolved (holder)': [], 'release call -> announcement heard (waiter tab)': [], 'announcement heard -> waiter holds': [], 'total handoff': [] }
  for (let i = 0; i < 30; i++) {
    const key = `k${i}`
    await a.page.evaluate(([ns, key]) => window.bench.hold('zaris', ns, key), [ns, key] as const)
    await w.page.evaluate(([ns, key]) => window.bench.wait('zaris', ns, key, 15), [ns, key] as const)
    await w.page.evaluate(() => ((window as unknown as { heard: number[] }).heard = []))
    const t0 = (await a.page.evaluate(() => window.bench.release())) - a.offset
    const t1 = (await a.page.evaluate(() => window.bench.absNow())) - a.offset
    const t2 = (await w.page.evaluate(() => window.bench.waited())) - w.offset
    const heard = (await w.page.evaluate(() => (window as unknown as { heard: number[] }).heard[0]!)) - w.offset
    await w.page.evaluate(() => window.bench.release())
    parts['release call -> release resolved (holder)']!.push(Math.min(t1, t2) - t0)
    parts['release call -> announcement heard (waiter tab)']!.push(heard - t0)
    parts['announcement heard -> waiter holds']!.push(t2 - heard)
    parts['total handoff']!.push(t2 - t0)
  }
  for (const [k, v] of Object.entries(parts)) console.log(`${k.padEnd(50)} median ${median(v).toFixed(2)} ms`)
} finally {
  await b.close()
}
