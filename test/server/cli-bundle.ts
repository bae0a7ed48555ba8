/**
 * The `zaris` bin for tests that run it as a process: src/cli/zaris.ts
 * bundled with esbuild, as tsup builds dist/cli.js (dependencies left as
 * imports). A node starts from it in about a third of the time
 * `node --import tsx src/cli/zaris.ts` takes (0.4 s against 1.1-1.3 s,
 * measured on the 2-core machine), and `npm test` starts a node some hundred
 * times. {@link bundle} does the same for other scripts tests start as
 * processes (the fault tests' worker, test/faults/procs.ts).
 *
 * Built once per state of the sources: the bundle's folder is named by a hash
 * of every file under src/ (and the test folders the script imports from), so
 * the test files of a run (each in a process of its own) share one build, and
 * a changed source is never run stale.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { basename, join, relative, resolve } from 'node:path'
import { buildSync, version } from 'esbuild'

const root = resolve(import.meta.dirname, '../..')

const cacheRoot = join(root, 'node_modules', '.cache')
const built = new Map<string, Record<string, string>>()

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((d) => (d.isDirectory() ? files(join(dir, d.name)) : [join(dir, d.name)]))
    .sort()
}

function sourceHash(dirs: string[]): string {
  const hash = createHash('sha256').update(`esbuild ${version}\n`)
  for (const dir of dirs) for (const file of files(join(root, dir))) hash.update(`${relative(root, file)}\n`).update(readFileSync(file)).update('\n')
  return hash.digest('hex').slice(0, 16)
}

/**
 * Bundles `entries` (paths from the repository root) into
 * node_modules/.cache/`name`/<checkout>/<hash>/<entry's name>.mjs, once per state of
 * src/ and of `sources` (further folders the entries import from); resolves
 * the path of each output by its entry. Inside node_modules, so that their
 * imports of ioredis, zod ... resolve; `zaris` imports resolve to src/
 * through tsconfig.json's paths, as under tsx.
 */
export function bundle(name: string, entries: string[], sources: string[] = []): Record<string, string> {
  const key = `${name}\n${entries.join('\n')}`
  const known = built.get(key)
  if (known) return known
  // One folder per checkout: worktrees that share node_modules (a Stryker run's) must not delete each other's builds.
  const cache = join(cacheRoot, name, createHash('sha256').update(root).digest('hex').slice(0, 8))
  const dir = join(cache, sourceHash(['src', ...sources]))
  const outputs = Object.fromEntries(entries.map((e) => [e, join(dir, `${basename(e).replace(/\.ts$/, '')}.mjs`)]))
  if (!Object.values(outputs).every((f) => existsSync(f))) {
    // Builds of older sources go; built in a folder of its own and renamed whole, as test files may build at once.
    for (const old of existsSync(cache) ? readdirSync(cache) : []) if (join(cache, old) !== dir) rmSync(join(cache, old), { recursive: true, force: true })
    const partial = `${dir}.${process.pid}.partial`
    rmSync(partial, { recursive: true, force: true })
    mkdirSync(partial, { recursive: true })
    buildSync({ entryPoints: entries.map((e) => join(root, e)), bundle: true, platform: 'node', format: 'esm', packages: 'external', outExtension: { '.js': '.mjs' }, outdir: partial, logLevel: 'warning' })
    try {
      renameSync(partial, dir)
    } catch (err) {
      // Another test file's build got there first: the same sources, the same bundle.
      rmSync(partial, { recursive: true, force: true })
      if (!Object.values(outputs).every((f) => existsSync(f))) throw err
    }
  }
  built.set(key, outputs)
  return outputs
}

/** The path of the bundled bin, zaris.mjs: the bin runs main() only when started under a name it knows. */
export function cliBundle(): string {
  return bundle('zaris-cli-bundle', ['src/cli/zaris.ts'])['src/cli/zaris.ts']!
}
