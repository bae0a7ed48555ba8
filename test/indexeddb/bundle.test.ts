/**
 * `zaris` + `zaris/indexeddb` bundled for the browser the way an app would
 * (Vite, minified, from source with the browser variants the package's
 * `browser` export condition serves): no chunk may import a Node built-in,
 * no Node-only adapter is even a chunk, and the sizes a `zaris://idb` app
 * loads are printed (min+gzip).
 */
import { builtinModules } from 'node:module'
import { describe, expect, it } from 'vitest'
import { bundle, gz, kb, min, type Chunk } from '../package/browser-bundle'

const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)])

function assertNoNodeBuiltins({ chunks, warnings }: { chunks: Chunk[]; warnings: string[] }): void {
  expect(chunks.length).toBeGreaterThan(0)
  for (const c of chunks) {
    const imports = [...c.imports, ...c.dynamicImports]
    expect(imports.filter((i) => builtins.has(i) || i.startsWith('node:')), c.fileName).toEqual([])
    expect(c.code, c.fileName).not.toMatch(/__vite-browser-external|from\s*["']node:|import\(\s*["']node:/)
  }
  expect(warnings.filter((w) => /externalized for browser compatibility|node:/.test(w))).toEqual([])
}

const hasModule = (c: Chunk, path: string) => Object.keys(c.modules).some((m) => m.includes(path))

describe('browser bundle', () => {
  it('zaris + zaris/indexeddb bundle with no Node built-in', async () => {
    const both = await bundle(
      "import { connect, backgroundClock } from 'zaris'\nimport { indexedDbAdapter } from 'zaris/indexeddb'\n" +
        'Object.assign(globalThis, { app: { connect, indexedDbAdapter, backgroundClock } })\n',
    )
    assertNoNodeBuiltins(both)
    const entry = both.chunks.filter((c) => c.isEntry)
    expect(entry.some((c) => hasModule(c, 'adapters/indexeddb/page-store'))).toBe(true)

    // The usual app: only `connect`, which loads the IndexedDB adapter as a chunk of its own.
    const lazy = await bundle("import { connect } from 'zaris'\nObject.assign(globalThis, { open: () => connect('zaris://idb/app') })\n")
    assertNoNodeBuiltins(lazy)
    const lazyEntry = lazy.chunks.filter((c) => c.isEntry)
    const idbChunk = lazy.chunks.filter((c) => !c.isEntry && hasModule(c, 'adapters/indexeddb/page-store'))
    expect(idbChunk).toHaveLength(1)
    expect(lazyEntry.some((c) => hasModule(c, 'adapters/indexeddb'))).toBe(false)
    // connect's table is the page's (src/schemes.browser.ts): memory, IndexedDB and HTTP chunks, nothing Node-only.
    const modules = lazy.chunks.flatMap((c) => Object.keys(c.modules))
    expect(modules.some((m) => m.endsWith('src/schemes.browser.ts'))).toBe(true)
    expect(modules.filter((m) => /src\/(schemes\.ts|adapters\/(redis|sqlite|etcd)|server)\b/.test(m))).toEqual([])
    expect(lazy.chunks.some((c) => hasModule(c, 'adapters/memory'))).toBe(true)
    expect(lazy.chunks.some((c) => hasModule(c, 'adapters/http/client'))).toBe(true)

    console.log(
      'browser bundle (vite, minified, gzip -9):\n' +
        `  zaris + zaris/indexeddb imported statically: ${kb(min(entry))} min, ${kb(gz(entry))} min+gzip\n` +
        `  import { connect } from 'zaris': entry ${kb(min(lazyEntry))} min, ${kb(gz(lazyEntry))} min+gzip; ` +
        `+ the indexeddb chunk loaded by zaris://idb ${kb(min(idbChunk))} min, ${kb(gz(idbChunk))} min+gzip\n` +
        `  every chunk (all adapters a page's connect can load: memory, indexeddb, http): ${kb(min(lazy.chunks))} min, ${kb(gz(lazy.chunks))} min+gzip`,
    )
  }, 60_000)
})
