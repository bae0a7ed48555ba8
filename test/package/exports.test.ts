/**
 * The published package, as users load it: `npm run build`, then `import` and
 * `require` of every built subpath from a separate Node process resolving
 * 'zaris' through package.json's exports map.
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, mkdirSync, symlinkSync } from 'node:fs'
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
