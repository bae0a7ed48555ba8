/**
 * The floor of a cross-tab handoff that the store hands over in the
 * release's own step (bench/FINDINGS.md, "Cross-tab handoff"): the holder
 * runs one read-then-write transaction (it would write the next holder's
 * entry), then lets its Web Lock go, and the waiter holds at the grant with
 * no transaction of its own. Timed as the bench's handoff row (half of two
 * handoffs in a row, each tab's own clock), side by side with
 * navigator.locks alone, zaris/tabs and tx + message + tx, in turns.
 *
 *   npx tsx bench/tools/handoff-floor.ts [rounds] [handoffs]
 *
 * @module
 */
import { startBrowser } from '../browser/driver'
import { median } from '../lib/measure'

const rounds = Number(process.argv[2] ?? 6)
const per = Number(process.argv[3] ?? 12)
const kinds = ['weblocks', 'gate-tx', 'tabs', 'raw'] as const
const b = await startBrowser()
try {
  const tabs = [await b.tab(), await b.tab()] as const
  const ns = 'floor'
  for (const t of tabs) await t.page.evaluate((ns) => window.bench.ready(ns), ns)
  const lat: Record<string, number[]> = {}
  for (let r = 0; r < rounds; r++) {
    for (const kind of kinds) {
      const key = `floor-${kind}-${r}`
      await tabs[0].page.evaluate(([kind, ns, key]) => window.bench.hold(kind, ns, key), [kind, ns, key] as const)
      const released: number[] = []
      const taken: number[] = []
      for (let i = 0; i < per; i++) {
        const [from, to] = i % 2 === 0 ? [tabs[0], tabs[1]] : [tabs[1], tabs[0]]
        await to.page.evaluate(([kind, ns, key]) => window.bench.wait(kind, ns, key, 15), [kind, ns, key] as const)
        released.push(await from.page.evaluate(() => window.bench.release()))
        taken.push(await to.page.evaluate(() => window.bench.waited()))
      }
      for (let i = 0; i + 1 < per; i++) (lat[kind] ??= []).push((taken[i + 1]! - released[i]! - (released[i + 1]! - taken[i]!)) / 2)
      await tabs[per % 2]!.page.evaluate(() => window.bench.release())
    }
  }
  const base = median(lat.weblocks!)
  for (const kind of kinds) {
    const m = median(lat[kind]!)
    console.log(`${kind.padEnd(10)} p50 ${m.toFixed(3)} ms  ${(m / base).toFixed(2)}x navigator.locks  (${lat[kind]!.length} handoffs)`)
  }
} finally {
  await b.close()
}
