/**
 * The acquire path stays in one folder with one entry (issue 29): the files
 * one `locks.acquire` runs on a warm memory client, from the call to the
 * handle (acquire-path.ts prints them from V8's coverage), are the public
 * call (locks.ts), the client's context, the acquire folder, the handle's
 * folder, the contract and time — and outside code enters the acquire folder
 * only through its entry point (index.ts) and the checks made at the call.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { expect, test } from 'vitest'
import { sourceFiles } from './house'

const root = resolve(import.meta.dirname, '../..')

/** Core files the path ran when this was set (17: acquire 6, hold 3, contract 3, time 2, locks, client, context); a detour that adds files fails here. */
const MOST_CORE_FILES = 17

test('one locks.acquire runs the acquire folder, the handle and the contract, and nothing else of the core', () => {
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'test/package/acquire-path.ts'], { cwd: root, encoding: 'utf8' })
  const files = JSON.parse(out.trim().split('\n').at(-1)!) as string[]
  const core = files.filter((f) => f.startsWith('core/'))
  console.log(`locks.acquire runs ${core.length} core files and ${files.length - core.length} of the store:\n  ${files.join('\n  ')}`)
  const allowed = /^core\/(acquire\/|hold\/|contract\/|time\/|(locks|client|context)\.ts$)/
  expect(core.filter((f) => !allowed.test(f))).toEqual([])
  expect(core.filter((f) => f.startsWith('core/acquire/'))).toContain('core/acquire/index.ts')
  // Nothing but the store (the memory adapter and its kit) outside the core.
  expect(files.filter((f) => !f.startsWith('core/') && !/^adapters\/(memory\.ts|kit\/)/.test(f))).toEqual([])
  expect(core.length).toBeLessThanOrEqual(MOST_CORE_FILES)
}, 30_000)

test('code outside src/core/acquire imports from it only the entry point and the checks made at the call', () => {
  const src = resolve(root, 'src')
  const inside = resolve(src, 'core/acquire')
  const bad: string[] = []
  for (const file of sourceFiles(src)) {
    if (file.startsWith(inside + '/')) continue
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/(?:from\s+|import\()\s*'([^']+)'/g)) {
      const target = resolve(file, '..', m[1]!)
      if (!target.startsWith(inside)) continue
      const rest = target.slice(inside.length)
      if (rest !== '' && rest !== '/index' && rest !== '/checks' && rest !== '/shared-group') bad.push(`${file.slice(src.length + 1)}: ${m[1]}`)
    }
  }
  expect(bad).toEqual([])
})
