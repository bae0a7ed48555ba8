/**
 * The bench's "zaris + zaris/indexeddb" row (what loads at start: the entry
 * chunk and the chunks it imports statically, min+gzip) for the
 * src/ tree of each commit given, or of each first-parent commit since one:
 * which change grew the browser bundle. Every tree is built by this checkout's
 * Vite, with the browser-variant rule, so only src/ differs between rows.
 *
 *   npx tsx bench/tools/bundle-at.ts d2a2083 main          # two commits
 *   npx tsx bench/tools/bundle-at.ts --since d2a2083        # every first-parent commit after it
 *
 * @module
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { build, type Plugin, type Rollup } from 'vite'

const root = fileURLToPath(new URL('../../', import.meta.url))
const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim()

/** The same rule as scripts/browser-variants.ts, for a src/ tree elsewhere (older trees may lack the script). */
function variants(src: string): Plugin {
  return {
    name: 'variants',
    enforce: 'pre',
    resolveId(source, importer) {
      if (!importer || !/^\.\.?\//.test(source) || !(dirname(importer) + sep).startsWith(src + sep)) return null
      const variant = `${resolve(dirname(importer), source)}.browser.ts`
      return existsSync(variant) ? variant : null
    },
  }
}

async function entryGzip(src: string, work: string): Promise<number> {
  const idb = ['adapters/indexeddb/index.ts', 'adapters/indexeddb.ts'].map((p) => join(src, p)).find((p) => existsSync(p))!
  const entry = join(work, 'app.ts')
  writeFileSync(entry, "import { connect } from 'zaris'\nimport { indexedDbAdapter } from 'zaris/indexeddb'\nObject.assign(globalThis, { app: { connect, indexedDbAdapter } })\n")
  const out = (await build({
    configFile: false,
    logLevel: 'silent',
    root: work,
    plugins: [variants(src)],
    resolve: { alias: { 'zaris/indexeddb': idb, zaris: join(src, 'index.ts') } },
    build: { write: false, minify: true, target: 'es2022', modulePreload: false, rollupOptions: { input: entry } },
    cacheDir: join(work, '.vite'),
  })) as Rollup.RollupOutput
  const chunks = out.output.filter((o): o is Rollup.OutputChunk => o.type === 'chunk')
  const byName = new Map(chunks.map((c) => [c.fileName, c]))
  const start = new Set<Rollup.OutputChunk>()
  const visit = (c: Rollup.OutputChunk | undefined) => {
    if (!c || start.has(c)) return
    start.add(c)
    c.imports.forEach((name) => visit(byName.get(name)))
  }
  chunks.filter((c) => c.isEntry).forEach(visit)
  return [...start].reduce((t, c) => t + gzipSync(c.code, { level: 9 }).length, 0)
}

const args = process.argv.slice(2)
const commits = args[0] === '--since' ? [args[1]!, ...git('log', '--first-parent', '--reverse', '--format=%h', `${args[1]}..HEAD`).split('\n')] : args
// Inside the repo, so that the trees' bare imports (idb, zod) resolve from its node_modules.
mkdirSync(join(root, 'bench/.partial'), { recursive: true })
const work = mkdtempSync(join(root, 'bench/.partial/bundle-at-'))
try {
  let before: number | undefined
  for (const commit of commits) {
    const tree = join(work, commit.replace(/[^\w.-]/g, '_'))
    mkdirSync(tree)
    execFileSync('sh', ['-c', `git archive ${commit} src | tar -x -C "${tree}"`], { cwd: root })
    const size = await entryGzip(join(tree, 'src'), tree)
    const delta = before === undefined ? '' : ` (${size - before >= 0 ? '+' : ''}${size - before})`
    console.log(`${git('log', '-1', '--format=%h', commit)} ${size} B${delta}  ${git('log', '-1', '--format=%s', commit).slice(0, 80)}`)
    before = size
  }
} finally {
  rmSync(work, { recursive: true, force: true })
}
