/**
 * Leader tab closed → new leader, for zaris/elect against broadcast-channel's
 * LeaderElection, taking turns in one Chromium, with what the zaris/elect
 * successor waited for: from `page.close()` to `elected` (it leads on the
 * grant, the term's token following: the figure set against
 * broadcast-channel's), to its gate's grant (the
 * browser freeing the closed tab's Web Lock), from the grant to its commit's
 * start, the commit (one readwrite transaction), and from there to the
 * campaign's answer; and, for comparison, a commit of the new leader's
 * 200 ms later; and `raw`, no zaris: the Web Lock's grant, then one
 * readwrite transaction on a database the tab keeps open (the floor of any
 * design whose term is a commit). Prints each trial and the medians.
 *
 *   npx tsx bench/tools/elect-closed.ts [samples per contender, default 12]
 *
 * @module
 */
import { fileURLToPath } from 'node:url'
import { startBrowser, type Tab } from '../browser/driver'
import { absNow, median } from '../lib/measure'
import type { TraceApi } from './elect-closed/page'

const samples = Number(process.argv[2] ?? 12)
const b = await startBrowser({ page: { root: fileURLToPath(new URL('./elect-closed/', import.meta.url)) } })
type W = { trace: TraceApi }
try {
  const lat: Record<string, number[]> = { elected: [], elect: [], bc: [], raw: [] }
  const rawGrant: number[] = []
  const parts: Record<string, number[]> = { grant: [], 'grant→commit': [], commit: [], 'commit→led': [], 'a commit 200 ms later': [] }
  const waiter = await b.tab()
  for (let i = 0; i < samples; i++) {
    for (const kind of ['elect', 'bc', 'raw'] as const) {
      const ns = `closed-${kind}`
      const key = `leader-${i}`
      const holder: Tab = await b.tab()
      await holder.page.evaluate(([kind, ns, key]) => (window as unknown as W).trace.campaign(kind, ns, key), [kind, ns, key] as const)
      await holder.page.evaluate(() => (window as unknown as W).trace.led())
      await waiter.page.evaluate(([kind, ns, key]) => (window as unknown as W).trace.campaign(kind, ns, key), [kind, ns, key] as const)
      const t0 = absNow()
      await holder.close()
      const led = await waiter.page.evaluate(() => (window as unknown as W).trace.led())
      const at = (t: number) => t - waiter.offset - t0
      lat[kind]!.push(at(led))
      if (kind === 'elect') {
        lat.elected!.push(at(await waiter.page.evaluate(() => (window as unknown as W).trace.elected())))
        const stamps = await waiter.page.evaluate(() => (window as unknown as W).trace.stamps())
        const granted = stamps.find(([s]) => s === 'granted')?.[1]
        const start = stamps.filter(([s, t]) => s === 'commit-start' && t >= (granted ?? 0))[0]?.[1]
        const done = stamps.filter(([s, t]) => s === 'commit-done' && t >= (start ?? 0))[0]?.[1]
        if (granted !== undefined && start !== undefined && done !== undefined) {
          parts.grant!.push(at(granted))
          parts['grant→commit']!.push(start - granted)
          parts.commit!.push(done - start)
          parts['commit→led']!.push(led - done)
          const quiet = await waiter.page.evaluate(() => (window as unknown as W).trace.later(200))
          parts['a commit 200 ms later']!.push(quiet)
          console.log(`elect elected ${lat.elected!.at(-1)!.toFixed(1)} ms, term ${at(led).toFixed(1)} ms: grant ${at(granted).toFixed(1)}, then commit start +${(start - granted).toFixed(1)}, commit ${(done - start).toFixed(1)}, led +${(led - done).toFixed(1)}; a commit 200 ms later ${quiet.toFixed(1)}`)
        }
      } else if (kind === 'raw') {
        const granted = (await waiter.page.evaluate(() => (window as unknown as W).trace.stamps())).find(([s]) => s === 'granted')?.[1]
        if (granted !== undefined) rawGrant.push(at(granted))
        console.log(`raw   ${at(led).toFixed(1)} ms: grant ${granted === undefined ? '?' : at(granted).toFixed(1)}, then one readwrite transaction`)
      } else {
        console.log(`bc    ${at(led).toFixed(1)} ms`)
      }
      // Let the new leader go before the next trial (each trial uses a key and tab of its own).
      await waiter.page.reload()
      await waiter.page.waitForFunction(() => (window as unknown as { benchReady?: boolean }).benchReady === true)
    }
  }
  const m = (xs: number[]) => +median(xs).toFixed(1)
  console.log(JSON.stringify({ elected: m(lat.elected!), 'elected ratio': +(median(lat.elected!) / median(lat.bc!)).toFixed(2), elect: m(lat.elect!), bc: m(lat.bc!), raw: m(lat.raw!), 'raw grant': rawGrant.length ? m(rawGrant) : null, ratio: +(median(lat.elect!) / median(lat.bc!)).toFixed(2), ...Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, v.length ? m(v) : null])) }))
} finally {
  await b.close()
}
