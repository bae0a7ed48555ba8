/**
 * Which modules make up the `zaris` + `zaris/indexeddb` browser bundle
 * (Vite, minified), largest first, with each one's minified bytes and the
 * gzip size of the bundle without it (its marginal gzip cost).
 *
 *   npx tsx bench/tools/bundle-breakdown.ts          the client and the IndexedDB adapter
 *   npx tsx bench/tools/bundle-breakdown.ts elect    the election-only entry (zaris/elect)
 *
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { build, type Rollup } from 'vite'

const root = fileURLToPath(new URL('../../', import.meta.url))
mkdirSync(join(root, 'bench/.partial'), { recursive: true })
const dir = mkdtempSync(join(root, 'bench/.partial/bundle-'))
try {
  const entry = join(dir, 'app.ts')
  const app =
    process.argv[2] === 'elect'
      ? "import { election } from 'zaris/elect'\nObject.assign(globalThis, { app: { election } })\n"
      : "import { connect } from 'zaris'\nimport { indexedDbAdapter } from 'zaris/indexeddb'\nObject.assign(globalThis, { app: { connect, indexedDbAdapter } })\n"
  writeFileSync(entry, app)
  const out = (await build({
    configFile: false,
    logLevel: 'silent',
    root: dir,
    resolve: { alias: { 'zaris/elect': join(root, 'src/elect/index.ts'), 'zaris/indexeddb': join(root, 'src/adapters/indexeddb/index.ts'), zaris: join(root, 'src/index.ts') } },
    build: { write: false, minify: true, target: 'es2022', modulePreload: false, rollupOptions: { input: entry } },
  })) as Rollup.RollupOutput
  const chunk = out.output.find((o): o is Rollup.OutputChunk => o.type === 'chunk' && o.isEntry)!
  const total = gzipSync(chunk.code, { level: 9 }).length
  console.log(`entry chunk: ${chunk.code.length} B min, ${total} B min+gzip`)
  const mods = Object.entries(chunk.modules).sort((a, b) => b[1].renderedLength - a[1].renderedLength)
  for (const [id, m] of mods.slice(0, 25)) {
    console.log(`${String(m.renderedLength).padStart(6)} B min  ${id.replace(root, '').replace(/^.*node_modules\//, 'node_modules/')}`)
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
