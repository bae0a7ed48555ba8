/**
 * Bundle size: what a page loads (issue 30) — the package as `npm pack`
 * ships it, in a Vite app electing a leader over `zaris://idb` (with the
 * client, and with the election-only entry `zaris/elect`), one that
 * also locks and watches, and broadcast-channel's LeaderElection in the same
 * kind of app, each in three Chromium tabs (bench/browser/packed-app.ts):
 * every JS file the tabs fetch, gzip -9, and how many; and the HTTP client
 * chunk a page loads for `connect('zaris://host…')` (issue 16's target: at
 * most 10 kB), built from source.
 *
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { build, type Rollup } from 'vite'
import { viteBrowserVariants } from '../../scripts/browser-variants'
import { appFolder, launch, loadApp, type PageLoad } from '../browser/packed-app'
import { PAGE_ELECTION, PAGE_ELECTION_ONLY, PAGE_FAMILY, PAGE_FAMILY_TABS } from '../lib/targets'
import type { Row } from '../lib/compare'
import { fmtBytes, type Scenario } from '../lib/report'
import type { BenchContext } from './context'

const src = (path: string) => fileURLToPath(new URL(`../../src/${path}`, import.meta.url))
const root = fileURLToPath(new URL('../../', import.meta.url))

/** Bundles `code` as an app's entry for the browser; resolves its chunks. */
async function bundle(code: string): Promise<Rollup.OutputChunk[]> {
  // Inside the repo, so that broadcast-channel resolves from its node_modules as in an app.
  mkdirSync(join(root, 'bench/.partial'), { recursive: true })
  const dir = mkdtempSync(join(root, 'bench/.partial/bundle-'))
  const entry = join(dir, 'app.ts')
  writeFileSync(entry, code)
  try {
    const result = (await build({
      configFile: false,
      logLevel: 'silent',
      root: dir,
      plugins: [viteBrowserVariants()],
      resolve: { alias: { 'zaris/indexeddb': src('adapters/indexeddb/index.ts'), zaris: src('index.ts') } },
      build: { write: false, minify: true, target: 'es2022', modulePreload: false, rollupOptions: { input: entry } },
      cacheDir: join(dir, '.vite'),
    })) as Rollup.RollupOutput | Rollup.RollupOutput[]
    return (Array.isArray(result) ? result : [result]).flatMap((r) => r.output).filter((o): o is Rollup.OutputChunk => o.type === 'chunk')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const PAGE_PEER = 'Vite app: broadcast-channel LeaderElection'

function row(label: string, zaris: boolean, chunks: Rollup.OutputChunk[]): Row {
  const min = chunks.reduce((t, c) => t + Buffer.byteLength(c.code), 0)
  const gzip = chunks.reduce((t, c) => t + gzipSync(c.code, { level: 9 }).length, 0)
  return { contender: label, zaris, opsPerSec: NaN, p50: NaN, p99: NaN, trials: 1, n: 0, extra: { min, gzip } }
}

/** A row of what the tabs of a packed-app page load: every JS file once, gzipped as served. */
function pageRow(label: string, zaris: boolean, load: PageLoad): Row {
  return { contender: label, zaris, opsPerSec: NaN, p50: NaN, p99: NaN, trials: 1, n: 0, extra: { min: load.min, gzip: load.gzip, files: load.files.length } }
}

/** The apps of bench/browser/packed-app.ts, each in three Chromium tabs, and what they load. */
async function pageRows(ctx: BenchContext): Promise<Row[]> {
  ctx.log('bundle: npm pack, Vite apps in Chromium tabs')
  const folder = await appFolder()
  const browser = await launch()
  try {
    return [
      pageRow(PAGE_ELECTION, true, await loadApp(folder, browser, 'election')),
      pageRow(PAGE_ELECTION_ONLY, true, await loadApp(folder, browser, 'election-only')),
      pageRow(PAGE_FAMILY, true, await loadApp(folder, browser, 'family')),
      pageRow(PAGE_FAMILY_TABS, true, await loadApp(folder, browser, 'family, zaris/tabs')),
      pageRow('Vite app: election, entry with top-level await', true, await loadApp(folder, browser, 'election, top-level await')),
      pageRow(PAGE_PEER, false, await loadApp(folder, browser, 'broadcast-channel')),
    ]
  } finally {
    await browser.close()
    folder.close()
  }
}

export async function bundleScenario(ctx: BenchContext): Promise<Scenario> {
  ctx.log('bundle: vite builds')
  const modules = (c: Rollup.OutputChunk) => Object.keys(c.modules).join(' ')
  // A page that talks to a node: the client is a chunk of its own, loaded by connect.
  const node = await bundle("import { connect } from 'zaris'\nObject.assign(globalThis, { open: () => connect('zaris://host:7861/ns') })\n")
  const client = node.filter((c) => /adapters\/http\/client\.ts/.test(modules(c)))
  const rows = [...(await pageRows(ctx)), row("connect('zaris://host'): its HTTP client chunk", true, client)]
  const columns: Record<string, Record<string, string>> = {}
  for (const r of rows) {
    columns[r.contender] = { min: fmtBytes(r.extra.min!), 'min+gzip': fmtBytes(r.extra.gzip!) }
    if (r.extra.files !== undefined) columns[r.contender]!.files = String(r.extra.files)
  }
  return {
    id: 'bundle',
    title: 'Bundle size (browser)',
    op: 'what a page loads: the packed package in a Vite app (production, its default chunking), 3 Chromium tabs, one closed once it leads; every JS file the tabs fetch, gzip -9 each',
    metric: 'size',
    rows,
    columns,
    notes: [
      'Vite apps: bench/browser/packed-app.ts (the app code is there); kB = 1000 bytes. "top-level await": the same election app with its setup awaited at the top of the entry module, which makes Vite keep every module the entry shares with a lazily loaded chunk out of the entry (bench/FINDINGS.md §27).',
      "connect('zaris://host'): the chunk a page loads on top of the entry to talk to a node, built from source (issue 16's target: <= 10 kB min+gzip); it reads answers without zod. What weighs what: bench/tools/chunk-breakdown.ts, bench/FINDINGS.md §15.",
    ],
  }
}
