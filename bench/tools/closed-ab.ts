/**
 * The two "tab closed" rows of `npm run bench` (bench/scenarios/browser.ts),
 * alone and with more samples: a holder's (or leader's) tab is closed, and
 * the time from `page.close()` to the waiting tab's grant is taken, for
 * zaris and its peer alternately, in one Chromium. Prints one JSON line of
 * medians, so runs of two trees can be set side by side (A/B):
 *
 *   npx tsx bench/tools/closed-ab.ts [samples per contender, default 12]
 *
 * @module
 */
import { startBrowser, type Tab } from '../browser/driver'
import { absNow, median } from '../lib/measure'

type Kind = 'zaris' | 'weblocks' | 'zaris-election' | 'bc-election'
const samples = Number(process.argv[2] ?? 12)
const b = await startBrowser()
try {
  const out: Record<string, number> = {}
  for (const [what, kinds] of [
    ['holder', ['zaris', 'weblocks']],
    ['leader', ['zaris-election', 'bc-election']],
  ] as const) {
    const ns = `ab-${what}`
    const waiter = await b.tab()
    await waiter.page.evaluate((ns) => window.bench.ready(ns), ns)
    const lat: Record<string, number[]> = {}
    for (let i = 0; i < samples; i++) {
      for (const kind of kinds as readonly Kind[]) {
        const key = `${what}-${kind}-${i}`
        const holder: Tab = await b.tab()
        await holder.page.evaluate(([kind, ns, key]) => window.bench.hold(kind, ns, key), [kind, ns, key] as const)
        await waiter.page.evaluate(([kind, ns, key]) => window.bench.wait(kind, ns, key, 30), [kind, ns, key] as const)
        const t0 = absNow()
        await holder.close()
        const t1 = await waiter.page.evaluate(() => window.bench.waited())
        await waiter.page.evaluate(() => window.bench.release())
        ;(lat[kind] ??= []).push(t1 - waiter.offset - t0)
      }
    }
    await waiter.close()
    const [z, peer] = kinds
    out[`${what} ${z} ms`] = +median(lat[z]!).toFixed(1)
    out[`${what} ${peer} ms`] = +median(lat[peer]!).toFixed(1)
    // As the bench's table: zaris's latency over the peer's (lower is better).
    out[`${what} ratio`] = +(median(lat[z]!) / median(lat[peer]!)).toFixed(2)
  }
  console.log(JSON.stringify(out))
} finally {
  await b.close()
}
