/**
 * The `zaris` bin for tests that run it as a process: src/server/cli.ts
 * bundled with esbuild, as tsup builds dist/cli.js (dependencies left as
 * imports). A node starts from it in about a third of the time
 * `node --import tsx src/server/cli.ts` takes (0.4 s against 1.1-1.3 s,
 * measured on the 2-core machine), and `npm test` starts a node some hundred
 * times.
 *
 * Built once per state of src/: the bundle's folder is named by a hash of
 * every file under src/, so the test files of a run (each in a process of its
 * own) share one build, and a changed source is never run stale.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { buildSync, version } from 'esbuild'

const root = resolve(import.meta.dirname, '../..')

const cache = join(root, 'node_modules', '.cache', 'zaris-cli-bundle')
let built: string | undefined

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((d) => (d.isDirectory() ? files(join(dir, d.name)) : [join(dir, d.name)]))
    .sort()
}

function sourceHash(): string {
  const hash = createHash('sha256').update(`esbuild ${version}\n`)
  for (const file of files(join(root, 'src'))) hash.update(`${relative(root, file)}\n`).update(readFileSync(file)).update('\n')
  return hash.digest('hex').slice(0, 16)
}

/**
 * The path of the bundled bin. Inside node_modules, so that its imports of
 * ioredis, zod ... resolve; named cli.mjs, since the bin runs main() only
 * when started under that name.
 */
export function cliBundle(): string {
  if (built) return built
  const dir = join(cache, sourceHash())
  const outfile = join(dir, 'cli.mjs')
  if (!existsSync(outfile)) {
    // Builds of older sources go; a file written whole and renamed, as test files may build at once.
    for (const old of existsSync(cache) ? readdirSync(cache) : []) if (join(cache, old) !== dir) rmSync(join(cache, old), { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
    const partial = join(dir, `cli.${process.pid}.partial`)
    buildSync({ entryPoints: [join(root, 'src/server/cli.ts')], bundle: true, platform: 'node', format: 'esm', packages: 'external', outfile: partial, logLevel: 'warning' })
    renameSync(partial, outfile)
  }
  return (built = outfile)
}
