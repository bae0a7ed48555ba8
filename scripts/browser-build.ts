/**
 * dist/browser: what the `browser` export condition serves (Vite, webpack,
 * esbuild apps), laid out so that the app's bundler makes every chunking
 * decision — no chunks made in advance for it to split again.
 *
 * - One ESM file per source module (dist/browser/core/acquire/index.js for
 *   src/core/acquire/index.ts), its relative imports fully specified
 *   (`./x.js`), with each `x.ts` that has an `x.browser.ts` beside it
 *   replaced by it (./browser-variants.ts): a page's `connect` knows only a
 *   page's schemes, and no Node-only adapter is even a file here.
 * - Except the adapters a page can connect to (IndexedDB, memory, HTTP):
 *   each is one file with its own modules inside, and the adapter kit's that
 *   it uses, importing the core's files. `connect` loads the one it needs
 *   with one request: had the kit files of their own (IndexedDB and memory
 *   share it), or the HTTP adapter a lazily loaded part, every page would
 *   load them as chunks of their own beside the adapter's. The kit holds
 *   functions and a small class that each adapter uses alone, so a copy in
 *   each is safe; nothing of the core is copied.
 *
 * Run by `npm run build` after tsup (tsup.config.ts builds the rest).
 *
 *   npx tsx scripts/browser-build.ts
 *
 * @module
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, type Plugin } from 'esbuild'
import { browserVariant } from './browser-variants'

const root = fileURLToPath(new URL('../', import.meta.url))
const src = join(root, 'src') + sep
const out = join(root, 'dist/browser')

/** The public browser entries (package.json's `browser` conditions point at their files). */
export const BROWSER_ENTRIES = ['index.ts', 'adapters/memory.ts', 'adapters/indexeddb/index.ts', 'adapters/http/index.ts', 'testing.ts', 'web-locks/index.ts', 'otel/index.ts', 'elect/index.ts', 'tabs/index.ts']

/**
 * The adapters built as one file each, with their own modules inside; the
 * kit goes into each that uses it. A module of one imported from outside it
 * (`connect` loads the HTTP adapter's client) is that file.
 */
const BUNDLED: Array<{ entry: string; has: (file: string) => boolean }> = [
  { entry: 'adapters/indexeddb/index.ts', has: (f) => f.startsWith('adapters/indexeddb/') },
  { entry: 'adapters/memory.ts', has: (f) => f === 'adapters/memory.ts' },
  // The election-only entry: one file, with the few IndexedDB modules it uses copied in (see `inlined`).
  { entry: 'elect/index.ts', has: (f) => f.startsWith('elect/') },
  // The tabs entry likewise: its own modules, zaris/elect's and those IndexedDB modules, in one file.
  { entry: 'tabs/index.ts', has: (f) => f.startsWith('tabs/') },
  // Its address parsing is a page's `connect` (every app loads it at start): a file of its own.
  { entry: 'adapters/http/index.ts', has: (f) => f.startsWith('adapters/http/') && f !== 'adapters/http/address.ts' },
]

/** A module's place in the build: its own file, or inside the adapter file of `bundle`. */
function groupOf(file: string): string | undefined {
  if (file.startsWith('adapters/kit/')) return 'kit'
  return BUNDLED.find((b) => b.has(file))?.entry
}

/** Whether `target` goes inside the file of the module that imports it (`importer`). */
function inlined(importer: string, target: string): boolean {
  const to = groupOf(target)
  if (to === undefined) return false
  const from = groupOf(importer)
  // The election-only entry carries its own copy of the IndexedDB modules it uses (the format's one
  // definition, in the store's transactions), not the whole adapter file a page that elects never needs.
  if (from === 'elect/index.ts' && to === 'adapters/indexeddb/index.ts') return true
  if (from === 'tabs/index.ts' && (to === 'adapters/indexeddb/index.ts' || to === 'elect/index.ts')) return true
  // The kit goes into whichever adapter imports it; an adapter's own modules into that adapter.
  return to === 'kit' ? from !== undefined : to === from
}

/** The source file (relative to src/) that `path`, imported from `dir`, names. */
function resolveSource(path: string, dir: string): string {
  const variant = browserVariant(path, dir)
  if (variant) return relative(src, variant)
  const base = resolve(dir, path)
  for (const candidate of [`${base}.ts`, join(base, 'index.ts')]) {
    try {
      readFileSync(candidate)
      return relative(src, candidate)
    } catch {
      // not this one
    }
  }
  throw new Error(`browser build: cannot resolve ${path} from ${dir}`)
}

/** Marks the placeholder every cross-file import gets, rewritten to a relative path once the files are written. */
const PLACEHOLDER = '@zaris-browser/'

const layout: Plugin = {
  name: 'zaris-browser-layout',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      const file = resolveSource(args.path, args.resolveDir)
      const importer = relative(src, args.importer)
      if (inlined(importer, file)) return { path: join(src, file) }
      const target = BUNDLED.find((b) => b.has(file))?.entry ?? file
      return { path: PLACEHOLDER + target.replace(/\.ts$/, '.js'), external: true }
    })
    // Anything else (a package) stays a bare import: the browser entries import none.
    b.onResolve({ filter: /^[^./]/ }, (args) => (args.kind === 'entry-point' ? undefined : { path: args.path, external: true }))
  },
}

/** Every module the browser entries reach, each named by its path under src/. */
async function modules(): Promise<string[]> {
  const found = new Set<string>()
  const walk: Plugin = {
    name: 'zaris-browser-walk',
    setup(b) {
      b.onResolve({ filter: /^\.\.?\// }, (args) => {
        const file = resolveSource(args.path, args.resolveDir)
        found.add(file)
        return { path: join(src, file) }
      })
      b.onResolve({ filter: /^[^./]/ }, (args) => (args.kind === 'entry-point' ? undefined : { path: args.path, external: true }))
    },
  }
  await build({ entryPoints: BROWSER_ENTRIES.map((e) => join(src, e)), bundle: true, write: false, splitting: true, format: 'esm', outdir: out, plugins: [walk], logLevel: 'silent' })
  for (const e of BROWSER_ENTRIES) found.add(e)
  return [...found].sort()
}

/** Builds dist/browser (see the module doc). */
export async function buildBrowser(): Promise<string[]> {
  rmSync(out, { recursive: true, force: true })
  // Each module that is a file of its own: all but those inside an adapter file.
  const files = (await modules()).filter((m) => groupOf(m) === undefined || BUNDLED.some((b) => b.entry === m))
  const result = await build({
    entryPoints: files.map((f) => join(src, f)),
    outbase: src,
    outdir: out,
    bundle: true,
    splitting: false,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    treeShaking: true,
    plugins: [layout],
    logLevel: 'warning',
    metafile: true,
  })
  const written = Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js'))
  for (const file of written) {
    const path = join(root, file)
    const code = readFileSync(path, 'utf8')
    const fixed = code.replace(/(["'])@zaris-browser\/([^"']+)\1/g, (_, quote: string, target: string) => {
      let rel = relative(dirname(path), join(out, target)).split(sep).join('/')
      if (!rel.startsWith('.')) rel = `./${rel}`
      return `${quote}${rel}${quote}`
    })
    if (fixed.includes(PLACEHOLDER)) throw new Error(`browser build: ${file} still names ${PLACEHOLDER}`)
    writeFileSync(path, fixed)
  }
  return written
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const written = await buildBrowser()
  console.log(`dist/browser: ${written.length} files`)
}
