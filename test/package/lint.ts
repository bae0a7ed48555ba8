/**
 * `npm run lint:package` (and CI): the packed tarball, as npm would publish
 * it, through the ecosystem's checks. Run after `npm run build`.
 *
 * - publint --strict: package.json's fields against the files (warnings fail too);
 * - attw with .attw.json: every subpath's types resolve for ESM and CJS
 *   (node16) and bundlers; node10 is left out there, since it cannot see
 *   subpaths at all;
 * - attw on the root entry alone, strict: `zaris` also resolves under node10;
 * - attw on zaris/conformance with the esm-only profile: it is ESM only, as
 *   vitest is, so a require() of it is not expected to work.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const root = resolve(import.meta.dirname, '../..')
const dir = mkdtempSync(join(tmpdir(), 'zaris-pack-'))
const bin = (name: string) => join(root, 'node_modules', '.bin', name)

function step(title: string, command: string, args: string[]): boolean {
  console.log(`\n== ${title}`)
  try {
    execFileSync(command, args, { cwd: root, stdio: 'inherit' })
    return true
  } catch {
    console.error(`lint:package: ${title} failed`)
    return false
  }
}

try {
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })) as Array<{ filename: string }>
  const tarball = join(dir, packed!.filename)
  // An empty config: the root-only run must not take .attw.json's profile (a config file overrides flags).
  const strict = join(dir, 'attw-strict.json')
  writeFileSync(strict, '{}')
  const results = [
    step('publint', bin('publint'), ['run', tarball, '--strict']),
    step('attw: every subpath, ESM, CJS and bundler', bin('attw'), [tarball, '--no-emoji', '--format', 'table-flipped']),
    step('attw: the root entry, node10 included', bin('attw'), [tarball, '--entrypoints', '.', '--config-path', strict, '--no-emoji', '--format', 'table-flipped']),
    step('attw: zaris/conformance, ESM only', bin('attw'), [tarball, '--entrypoints', './conformance', '--config-path', strict, '--profile', 'esm-only', '--no-emoji', '--format', 'table-flipped']),
  ]
  if (results.includes(false)) process.exitCode = 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
