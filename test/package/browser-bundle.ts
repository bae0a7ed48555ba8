/**
 * Bundles a few lines of app code for the browser the way an app would
 * (Vite, minified, `zaris*` resolved to this source tree with the browser
 * variants the package's `browser` export condition serves:
 * scripts/browser-variants.ts), for the bundle tests and the size budgets.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { build, type Rollup } from 'vite'
import { viteBrowserVariants } from '../../scripts/browser-variants'

/** One output chunk of a bundle. */
export type Chunk = Rollup.OutputChunk

const src = (path: string) => fileURLToPath(new URL(`../../src/${path}`, import.meta.url))

/** The browser entries of the package, by import name. */
const alias = {
  'zaris/indexeddb': src('adapters/indexeddb/index.ts'),
  'zaris/http': src('adapters/http/index.ts'),
  'zaris/memory': src('adapters/memory.ts'),
  'zaris/web-locks': src('web-locks/index.ts'),
  'zaris/elect': src('elect/index.ts'),
  'zaris/tabs': src('tabs/index.ts'),
  zaris: src('index.ts'),
}

/** Bundles `code` as an app's entry for the browser; resolves the chunks and the build's warnings. */
export async function bundle(code: string): Promise<{ chunks: Chunk[]; warnings: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'zaris-bundle-'))
  const entry = join(dir, 'app.ts')
  writeFileSync(entry, code)
  const warnings: string[] = []
  try {
    const result = (await build({
      configFile: false,
      logLevel: 'silent',
      root: dir,
      plugins: [viteBrowserVariants()],
      resolve: { alias },
      build: {
        write: false,
        minify: true,
        target: 'es2022',
        modulePreload: false,
        // Chunks named as a real build names them, with a fixed 8-character hash: a content hash is 8 characters gzip
        // cannot shrink, so every change to a lazy chunk moved its importer's size by a few bytes either way.
        rollupOptions: { input: entry, output: { chunkFileNames: 'assets/[name]-00000000.js', entryFileNames: 'assets/[name]-00000000.js' }, onwarn: (w) => void warnings.push(String(w.message)) },
      },
    })) as Rollup.RollupOutput | Rollup.RollupOutput[]
    const outputs = (Array.isArray(result) ? result : [result]).flatMap((r) => r.output)
    return { chunks: outputs.filter((o): o is Chunk => o.type === 'chunk'), warnings }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The entry chunks and every chunk they import statically: what a page loads before any dynamic import. */
export function loadedAtStart(chunks: Chunk[]): Chunk[] {
  const byName = new Map(chunks.map((c) => [c.fileName, c]))
  const seen = new Set<Chunk>()
  const visit = (c: Chunk | undefined) => {
    if (!c || seen.has(c)) return
    seen.add(c)
    c.imports.forEach((name) => visit(byName.get(name)))
  }
  chunks.filter((c) => c.isEntry).forEach(visit)
  return [...seen]
}

/** Bytes after gzip -9, summed over chunks. */
export const gz = (chunks: Chunk[]) => chunks.reduce((t, c) => t + gzipSync(c.code, { level: 9 }).length, 0)
/** Minified bytes, summed over chunks. */
export const min = (chunks: Chunk[]) => chunks.reduce((t, c) => t + Buffer.byteLength(c.code), 0)
/** Bytes as KiB with one decimal. */
export const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`
