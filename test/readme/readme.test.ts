/**
 * The README's examples run as written. Every ```ts block that imports zaris
 * and uses only the in-process store is run as its own Node process with tsx;
 * it must exit by itself (no lingering timers or handles). Blocks that need a
 * node, Redis or a browser are run by those adapters' tests instead.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, test } from 'vitest'

const run = promisify(execFile)
const root = resolve(import.meta.dirname, '../..')
const readme = readFileSync(join(root, 'README.md'), 'utf8')
const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!)
const runnable = blocks.filter((code) => /from 'zaris/.test(code) && !/zaris:\/\/(?!inproc\/)|redis:\/\/|https?:\/\//.test(code))
// Inside the repo, so that 'zaris' resolves to the source through tsconfig paths.
const dir = mkdtempSync(join(root, 'test/readme/.run-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('README examples', () => {
  test('there are runnable examples', () => {
    expect(runnable.length).toBeGreaterThanOrEqual(8)
  })
  runnable.forEach((code, i) => {
    const title = code.split('\n').find((l) => l.includes('connect(') || l.includes('clients(')) ?? `block ${i}`
    test(`example ${i + 1}: ${title.trim().slice(0, 60)}`, async () => {
      const file = join(dir, `example-${i}.ts`)
      writeFileSync(file, code)
      const { stdout, stderr } = await run('npx', ['tsx', file], { cwd: root, timeout: 20_000 })
      expect(stderr).toBe('')
      expect(stdout.trim()).not.toBe('')
    }, 30_000)
  })
})
