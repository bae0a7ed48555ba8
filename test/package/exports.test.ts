/**
 * The published package, as users load it: `npm run build`, then `import` and
 * `require` of every built subpath from a separate Node process resolving
 * 'zaris' through package.json's exports map; the file list `npm pack` would
 * publish; the built `zaris` bin. (publint and attw: `npm run lint:package`.)
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { beforeAll, expect, test } from 'vitest'

const run = promisify(execFile)
const root = resolve(import.meta.dirname, '../..')
let app: string

beforeAll(async () => {
  await run('npm', ['run', 'build'], { cwd: root })
  // An app folder whose node_modules/zaris is this package, as after `npm install zaris`.
  app = mkdtempSync(join(tmpdir(), 'zaris-app-'))
  mkdirSync(join(app, 'node_modules'))
  symlinkSync(root, join(app, 'node_modules', 'zaris'), 'dir')
}, 120_000)

const program = `
  const lock = await (await z.connect('zaris://inproc/pkg')).locks.acquire('lock:a', { ttl: 1000 })
  const { ManualClock } = testing
  console.log(JSON.stringify({ token: lock.token, error: typeof z.ZarisError, memory: typeof memory.memoryAdapter, clock: new ManualClock(5).now() }))
  process.exit(0)
`

test('build emits ESM, CommonJS and declarations for every subpath', () => {
  for (const name of ['index', 'memory', 'testing']) {
    for (const ext of ['js', 'cjs', 'd.ts', 'd.cts']) expect(existsSync(join(root, 'dist', `${name}.${ext}`)), `${name}.${ext}`).toBe(true)
  }
})

test('import works', async () => {
  const code = `import * as z from 'zaris'; import * as memory from 'zaris/memory'; import * as testing from 'zaris/testing'; ${program}`
  const { stdout } = await run('node', ['--input-type=module', '-e', code], { cwd: app })
  expect(JSON.parse(stdout)).toEqual({ token: 1, error: 'function', memory: 'function', clock: 5 })
})

test('require works', async () => {
  const code = `const z = require('zaris'); const memory = require('zaris/memory'); const testing = require('zaris/testing'); (async () => { ${program} })()`
  const { stdout } = await run('node', ['-e', code], { cwd: app })
  expect(JSON.parse(stdout)).toEqual({ token: 1, error: 'function', memory: 'function', clock: 5 })
})

test('npm pack publishes only what a user needs: package.json, README, LICENSE and built files', async () => {
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json'], { cwd: root })
  const files = (JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path)
  const expected = (p: string) => /^(package\.json|README\.md|LICENSE(\.md)?)$/.test(p) || /^dist\/[\w.-]+\.(js|cjs|d\.ts|d\.cts)$/.test(p)
  expect(files.filter((p) => !expected(p))).toEqual([])
  expect(files).toContain('LICENSE') // package.json says MIT: the text ships with it
  // Built but loaded by nobody: the bin's CommonJS twin and declarations.
  expect(files.filter((p) => /^dist\/cli\.(cjs|d\.c?ts)$/.test(p))).toEqual([])

  // Everything package.json points at is in the package.
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>
  const targets: string[] = []
  const walk = (v: unknown): void => {
    if (typeof v === 'string') targets.push(v.replace(/^\.\//, ''))
    else if (v && typeof v === 'object') Object.values(v).forEach(walk)
  }
  walk([pkg.main, pkg.module, pkg.types, pkg.bin, pkg.exports])
  expect(targets.length).toBeGreaterThan(30)
  expect(targets.filter((t) => !files.includes(t))).toEqual([])
}, 60_000)

test('the built zaris bin runs: --help, and an inspect command loads its adapter chunk', async () => {
  const cli = join(root, 'dist', 'cli.js')
  expect(readFileSync(cli, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true)
  expect(statSync(cli).mode & 0o111).not.toBe(0)
  const { stdout } = await run(cli, ['--help'], { cwd: app })
  expect(stdout).toMatch(/^usage: zaris COMMAND/)
  // A node nobody runs: the http adapter loads and answers UNAVAILABLE (exit 1).
  const down = await run(cli, ['get', 'k', '--url', 'zaris://127.0.0.1:1/x'], { cwd: app }).then(
    () => ({ code: 0, stderr: '' }),
    (err: { code: number; stderr: string }) => err,
  )
  expect(down.code).toBe(1)
  expect(down.stderr).toMatch(/\(UNAVAILABLE\)/)
}, 30_000)
