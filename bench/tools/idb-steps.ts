/**
 * Where one tab's acquire + release over zaris://idb goes, step by step, in
 * headless Chromium, taking turns: two bare readwrite transactions (the
 * bench's ceiling), a Web Lock request `ifAvailable` granted and let go,
 * `navigator.locks.query()`, `adapter.commit` take + delete (no core), and
 * the full acquire + release, with the client and with zaris/tabs.
 *
 *   npx tsx bench/tools/idb-steps.ts [trials]
 *
 * @module
 */
import { startBrowser } from '../browser/driver'
import { alternate, type Contender } from '../lib/compare'
import { fmtMs, fmtOps } from '../lib/report'

const trials = Number(process.argv[2] ?? 3)
const b = await startBrowser({ minify: false })
try {
  const tab = await b.tab()
  await tab.page.evaluate(() => window.bench.ready('steps'))
  const d = 500
  /** A loop of `step` (a name the page knows), timed in the page. */
  const timed = (step: string): Contender['trial'] => () =>
    tab.page.evaluate(
      async ([step, d]) => {
        const a = (await window.bench.client('steps')).adapter
        const steps: Record<string, () => Promise<unknown>> = {
          weblock: () => navigator.locks.request('steps:x', { ifAvailable: true }, async () => {}),
          query: () => navigator.locks.query(),
          acquire: async () => {
            const c = await window.bench.client('steps')
            const t = performance.now()
            const lock = await c.locks.acquire('lock:split', { ttl: 30_000 })
            const mid = performance.now()
            await lock!.release()
            return [mid - t, performance.now() - mid]
          },
          tabs: async () => {
            const t0 = performance.now()
            const lock = await window.bench.lean('steps').locks.acquire('lock:split')
            const mid = performance.now()
            await lock!.release()
            return [mid - t0, performance.now() - mid]
          },
          commits: async () => {
            const r = await a.commit([{ key: 'c', revision: null }], [{ type: 'set', key: 'c', value: null, ttl: 30_000, owner: 'me' }])
            if (r.ok) await a.commit([{ key: 'c', created: r.entries[0]!.created }], [{ type: 'delete', key: 'c' }])
          },
        }
        const f = steps[step]!
        const lat: number[] = []
        const s = performance.now()
        let n = 0
        while (performance.now() - s < d) {
          const t = performance.now()
          const r = await f()
          lat.push(Array.isArray(r) ? r[0] * 1000 + Math.min(r[1], 0.999) : performance.now() - t)
          n++
        }
        return { ops: n, ms: performance.now() - s, lat }
      },
      [step, d] as const,
    )
  const rows = await alternate(
    [
      { label: '2 bare readwrite txs', zaris: false, trial: () => tab.page.evaluate((d) => window.bench.loop('raw', 'steps', d), d) },
      { label: 'Web Lock ifAvailable', zaris: false, trial: timed('weblock') },
      { label: 'navigator.locks.query()', zaris: false, trial: timed('query') },
      { label: 'adapter.commit take + delete', zaris: true, trial: timed('commits') },
      { label: 'acquire (ms) + release (µs<1ms)', zaris: true, trial: timed('acquire') },
      { label: 'acquire + release', zaris: true, trial: () => tab.page.evaluate((d) => window.bench.loop('zaris', 'steps', d), d) },
      { label: 'tabs acquire (ms) + release (µs<1ms)', zaris: true, trial: timed('tabs') },
      { label: 'tabs acquire + release', zaris: true, trial: () => tab.page.evaluate((d) => window.bench.loop('tabs', 'steps', d), d) },
    ],
    trials,
  )
  for (const r of rows) console.log(`${r.contender.padEnd(32)} ${fmtOps(r.opsPerSec).padStart(6)} /s  p50 ${fmtMs(r.p50).padStart(8)}  p99 ${fmtMs(r.p99).padStart(8)}`)
} finally {
  await b.close()
}
