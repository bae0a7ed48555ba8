/**
 * Bundle size: what a browser app ships, built the way an app builds (Vite,
 * minified, es2022, zaris's `browser` export condition: its browser variants,
 * scripts/browser-variants.ts), gzip -9: zaris with the IndexedDB adapter,
 * against broadcast-channel (its channel and its LeaderElection); and the
 * HTTP client chunk a page loads for `connect('zaris://host…')` (issue 16's
 * target: at most 10 kB).
 *
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { build, type Rollup } from 'vite'
import { viteBrowserVariants } from '../../scripts/browser-variants'
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

/** The entry chunks and every chunk they import statically: what a page loads before any dynamic import. */
function atStart(chunks: Rollup.OutputChunk[]): Rollup.OutputChunk[] {
  const byName = new Map(chunks.map((c) => [c.fileName, c]))
  const seen = new Set<Rollup.OutputChunk>()
  const visit = (c: Rollup.OutputChunk | undefined) => {
    if (!c || seen.has(c)) return
    seen.add(c)
    c.imports.forEach((name) => visit(byName.get(name)))
  }
  chunks.filter((c) => c.isEntry).forEach(visit)
  return [...seen]
}

function row(label: string, zaris: boolean, chunks: Rollup.OutputChunk[]): Row {
  const min = chunks.reduce((t, c) => t + Buffer.byteLength(c.code), 0)
  const gzip = chunks.reduce((t, c) => t + gzipSync(c.code, { level: 9 }).length, 0)
  return { contender: label, zaris, opsPerSec: NaN, p50: NaN, p99: NaN, trials: 1, n: 0, extra: { min, gzip } }
}

export async function bundleScenario(ctx: BenchContext): Promise<Scenario> {
  ctx.log('bundle: vite builds')
  const modules = (c: Rollup.OutputChunk) => Object.keys(c.modules).join(' ')
  const staticBoth = await bundle(
    "import { connect } from 'zaris'\nimport { indexedDbAdapter } from 'zaris/indexeddb'\nObject.assign(globalThis, { app: { connect, indexedDbAdapter } })\n",
  )
  // The usual app calls connect('zaris://idb/...'): the entry chunk, plus the IndexedDB chunk it loads.
  const lazy = await bundle("import { connect } from 'zaris'\nObject.assign(globalThis, { open: () => connect('zaris://idb/app') })\n")
  // (Liveness and the reaper, adapters/indexeddb/alive.ts, are a chunk the store loads when it is made: counted.)
  const loaded = [...new Set([...atStart(lazy), ...lazy.filter((c) => /adapters\/indexeddb\//.test(modules(c)))])]
  // A page that talks to a node: the client is a chunk of its own, loaded by connect.
  const node = await bundle("import { connect } from 'zaris'\nObject.assign(globalThis, { open: () => connect('zaris://host:7861/ns') })\n")
  const client = node.filter((c) => /adapters\/http\/client\.ts/.test(modules(c)))
  const bc = await bundle("import { BroadcastChannel, createLeaderElection } from 'broadcast-channel'\nObject.assign(globalThis, { BroadcastChannel, createLeaderElection })\n")
  const rows = [
    // At start: the entry and the chunks it imports statically (the bundler may split errors or validation into one).
    row('zaris + zaris/indexeddb', true, atStart(staticBoth)),
    row("connect('zaris://idb/…'): entry + idb chunk", true, loaded),
    row("connect('zaris://host'): its HTTP client chunk", true, client),
    row('broadcast-channel (channel + LeaderElection)', false, bc),
  ]
  const columns: Record<string, Record<string, string>> = {}
  for (const r of rows) columns[r.contender] = { min: fmtBytes(r.extra.min!), 'min+gzip': fmtBytes(r.extra.gzip!) }
  return {
    id: 'bundle',
    title: 'Bundle size (browser)',
    op: 'Vite production build (minified, es2022) of an app that imports it; gzip -9 of every chunk it loads',
    metric: 'size',
    rows,
    columns,
    notes: [
      'zaris + zaris/indexeddb: what a page that imports both loads at start (the entry chunk and the chunks it imports statically; the adapter uses raw IndexedDB requests, no wrapper; zod is not in it); liveness and the reaper are a chunk the store loads when it is made, counted in the connect row; kB = 1000 bytes.',
      "connect('zaris://host'): the chunk a page loads on top of the entry to talk to a node (issue 16's target: <= 10 kB min+gzip); it reads answers without zod. What weighs what: bench/tools/chunk-breakdown.ts, bench/FINDINGS.md §15.",
    ],
  }
}
