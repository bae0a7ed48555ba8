/**
 * `npm run build`, unless dist/ is already the build of the sources as they
 * are: every file in it newer than every file the build reads (make's rule).
 * CI runs `npm run build` just before `npm test` (.ci/run), and the build
 * takes ~27 s there (its declarations); building again only repeated it.
 * A source edited, a branch checked out or dependencies installed after the
 * build is newer than dist/, and the build runs.
 */
import { execFile } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** What tsup reads for dist/ (tsup.config.ts): the sources, the conformance suite it packs, its config and the installed tools. */
const INPUTS = ['src', 'test/conformance', 'test/lincheck', 'scripts', 'tsup.config.ts', 'tsconfig.json', 'package.json', 'package-lock.json', 'node_modules/.package-lock.json']

function mtimes(path: string): number[] {
  if (!existsSync(path)) return []
  const stat = statSync(path)
  if (!stat.isDirectory()) return [stat.mtimeMs]
  return readdirSync(path).flatMap((name) => mtimes(join(path, name)))
}

/** True when dist/ exists and each of its files is newer than each input. */
export function distIsCurrent(root: string): boolean {
  const built = mtimes(join(root, 'dist'))
  if (built.length === 0) return false
  const newestInput = Math.max(...INPUTS.flatMap((p) => mtimes(join(root, p))))
  return Math.min(...built) > newestInput
}

/** Builds the package into dist/ unless {@link distIsCurrent}; says which. */
export async function ensureBuilt(root: string): Promise<'built' | 'current'> {
  if (distIsCurrent(root)) return 'current'
  await run('npm', ['run', 'build'], { cwd: root })
  return 'built'
}
