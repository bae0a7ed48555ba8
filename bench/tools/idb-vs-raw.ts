/**
 * The IndexedDB adapter on idb's promises against the same adapter on raw
 * request callbacks, in one run: an earlier commit's src/ (the raw
 * version, `git archive`) and this tree's are built into one page, and in
 * headless Chromium they take turns at the bench's two IndexedDB rows — one
 * tab's acquire + release, and a handoff between two tabs — plus a bare
 * `adapter.commit` pair. Each variant has databases of its own.
 *
 *   npx tsx bench/tools/idb-vs-raw.ts <git ref of the raw version> [trials]
 *
 * With `INTERLEAVED=1`, only one tab's acquire + release, the two versions
 * cycle by cycle in turn (`trials` seconds of it): the A/B to trust on a
 * loaded machine.
 *
 * @module
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { startBrowser, type Tab } from '../browser/driver'
import { alternate, type Contender, type Row } from '../lib/compare'
import { fmtMs, fmtOps } from '../lib/report'

const [ref, trialsArg] = process.argv.slice(2)
if (!ref) throw new Error('usage: npx tsx bench/tools/idb-vs-raw.ts <git ref of the raw version> [trials]')
const trials = Number(trialsArg ?? 7)
const root = resolve(import.meta.dirname, '../..')

type Variant = 'idb' | 'raw'
const LABEL: Record<Variant, string> = { idb: 'idb (this tree)', raw: `raw requests (${ref})` }

/** A lock handed back and forth between two tabs, 12 times; each sample is half of two handoffs in a row, on one clock each. */
async function handoff(tabs: readonly [Tab, Tab], v: Variant, index: number) {
  const key = `handoff-${index}`
  const start = performance.now()
  await tabs[0].page.evaluate(([v, key]) => window.cmp.hold(v, key), [v, key] as const)
  const released: number[] = []
  const taken: number[] = []
  for (let i = 0; i < 12; i++) {
    const [from, to] = i % 2 === 0 ? [tabs[0], tabs[1]] : [tabs[1], tabs[0]]
    await to.page.evaluate(([v, key]) => window.cmp.wait(v, key), [v, key] as const)
    released.push(await from.page.evaluate(() => window.cmp.release()))
    taken.push(await to.page.evaluate(() => window.cmp.waited()))
  }
  await tabs[0].page.evaluate(() => window.cmp.release())
  const lat: number[] = []
  for (let i = 0; i + 1 < 12; i++) lat.push((taken[i + 1]! - released[i]! - (released[i + 1]! - taken[i]!)) / 2)
  return { ops: lat.length, ms: performance.now() - start, lat }
}

declare global {
  interface Window {
    cmp: {
      oneTab(v: Variant, ms: number): Promise<{ ops: number; ms: number; lat: number[] }>
      interleaved(ms: number): Promise<Record<Variant, number[]>>
      commits(v: Variant, ms: number): Promise<{ ops: number; ms: number; lat: number[] }>
      hold(v: Variant, key: string): Promise<void>
      wait(v: Variant, key: string): Promise<void>
      release(): Promise<number>
      waited(): Promise<number>
    }
  }
}

/** The page: both builds of zaris, each on a namespace of its own. */
const PAGE = `
import { connect } from 'zaris'
import { connect as connectRaw } from 'zaris-raw'
const open = { idb: () => connect('zaris://idb/cmp-idb'), raw: () => connectRaw('zaris://idb/cmp-raw') }
const clients = {}
const client = (v) => (clients[v] ??= open[v]())
const loop = async (op, ms) => {
  const lat = []
  const start = performance.now()
  let now = start
  while (now - start < ms) {
    const t = now
    await op()
    now = performance.now()
    lat.push(now - t)
  }
  return { ops: lat.length, ms: now - start, lat }
}
let held, waiting
window.cmp = {
  async oneTab(v, ms) {
    const c = await client(v)
    return loop(async () => (await c.locks.acquire('lock:one', { ttl: 30_000 })).release(), ms)
  },
  // One tab's acquire + release, the two builds cycle by cycle in turn: load falls on both alike.
  async interleaved(ms) {
    const c = { idb: await client('idb'), raw: await client('raw') }
    const lat = { idb: [], raw: [] }
    const start = performance.now()
    for (let i = 0; performance.now() - start < ms; i++) {
      const v = i % 2 === 0 ? 'idb' : 'raw'
      const t = performance.now()
      await (await c[v].locks.acquire('lock:one', { ttl: 30_000 })).release()
      lat[v].push(performance.now() - t)
    }
    return lat
  },
  async commits(v, ms) {
    const a = (await client(v)).adapter
    return loop(async () => {
      const r = await a.commit([{ key: 'c', revision: null }], [{ type: 'set', key: 'c', value: null, ttl: 30_000, owner: 'me' }])
      if (r.ok) await a.commit([{ key: 'c', created: r.entries[0].created }], [{ type: 'delete', key: 'c' }])
    }, ms)
  },
  async hold(v, key) {
    held = await (await client(v)).locks.acquire(key, { ttl: 30_000, wait: Infinity })
  },
  async wait(v, key) {
    const c = await client(v)
    waiting = c.locks.acquire(key, { ttl: 30_000, wait: Infinity }).then((lock) => ((held = lock), performance.timeOrigin + performance.now()))
    await new Promise((r) => setTimeout(r, 15))
  },
  async release() {
    const lock = held
    held = undefined
    const t = performance.timeOrigin + performance.now()
    await lock.release()
    return t
  },
  waited: () => waiting,
}
// What the driver reads of every bench page.
window.bench = { absNow: () => performance.timeOrigin + performance.now() }
window.benchReady = true
`

async function main(): Promise<void> {
  // Inside the repo, so that the raw copy's bare imports (zod, ...) resolve to this node_modules.
  const dir = mkdtempSync(join(root, '.bench-idb-vs-raw-'))
  try {
    mkdirSync(join(dir, 'raw'))
    execFileSync('sh', ['-c', `git archive ${ref} src | tar -x -C ${JSON.stringify(join(dir, 'raw'))}`], { cwd: root })
    mkdirSync(join(dir, 'page'))
    writeFileSync(join(dir, 'page', 'index.html'), '<!doctype html><meta charset="utf-8"><script type="module" src="./page.ts"></script>')
    writeFileSync(join(dir, 'page', 'page.ts'), PAGE)
    const b = await startBrowser({ page: { root: join(dir, 'page'), alias: { 'zaris-raw': join(dir, 'raw', 'src', 'index.ts') } } })
    try {
      const tabs = [await b.tab(), await b.tab()] as const
      const rows: Array<[string, Row[]]> = []
      const each = (name: string, make: (variant: Variant) => Contender) => async () => {
        rows.push([name, await alternate([make('idb'), make('raw')], trials, { throughput: name !== 'handoff' })])
      }
      if (process.env.INTERLEAVED) {
        const lat = { idb: [] as number[], raw: [] as number[] }
        for (let t = 0; t < trials; t++) {
          const r = await tabs[0].page.evaluate(() => window.cmp.interleaved(1_000))
          lat.idb.push(...r.idb)
          lat.raw.push(...r.raw)
        }
        const q = (a: number[], p: number) => [...a].sort((x, y) => x - y)[Math.floor(p * (a.length - 1))]!
        console.log(`one tab, acquire + release, cycle by cycle in turn (${lat.idb.length} + ${lat.raw.length} cycles):`)
        for (const v of ['idb', 'raw'] as const) console.log(`  ${LABEL[v].padEnd(26)} p25 ${fmtMs(q(lat[v], 0.25))}  p50 ${fmtMs(q(lat[v], 0.5))}  p75 ${fmtMs(q(lat[v], 0.75))}  mean ${fmtMs(lat[v].reduce((x, y) => x + y, 0) / lat[v].length)}`)
        return
      }
      await each('one tab: acquire + release', (v) => ({ label: LABEL[v], zaris: true, trial: () => tabs[0].page.evaluate(([v]) => window.cmp.oneTab(v, 500), [v] as const) }))()
      await each('adapter.commit: acquire + release commits', (v) => ({ label: LABEL[v], zaris: true, trial: () => tabs[0].page.evaluate(([v]) => window.cmp.commits(v, 500), [v] as const) }))()
      await each('handoff', (v) => ({ label: LABEL[v], zaris: true, trial: (i) => handoff(tabs, v, i) }))()
      for (const [name, [idb, raw]] of rows) {
        const ratio = name === 'handoff' ? raw!.p50 / idb!.p50 : idb!.opsPerSec / raw!.opsPerSec
        console.log(`\n${name} (${trials} trials each, taking turns)`)
        for (const r of [idb!, raw!]) console.log(`  ${r.contender.padEnd(26)} ${name === 'handoff' ? '' : `${fmtOps(r.opsPerSec).padStart(7)}/s  `}p50 ${fmtMs(r.p50).padStart(8)}  p99 ${fmtMs(r.p99).padStart(8)}`)
        console.log(`  idb / raw: ${ratio.toFixed(3)}x (above 1: idb faster)`)
      }
    } finally {
      await b.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
