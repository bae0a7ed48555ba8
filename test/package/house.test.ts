/**
 * The house rules of src/ (test/package/house.ts): no file over 450 lines,
 * no function over 120, no import loop, a core that imports and names no
 * adapter. Each check is also run on a small tree with one planted
 * violation of each rule, and must report exactly those.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { builtInSchemes } from '../../src/schemes'
import { elsewhere } from '../../src/schemes.browser'
import { closedRoomImports, coreViolations, importLoops, longFiles, longFunctions, type Violation } from './house'

const src = resolve(import.meta.dirname, '../../src')

/** What the core may not name: every adapter (src/adapters/*) and every store scheme or authority. */
const NAMES = [
  ...readdirSync(join(src, 'adapters')).filter((n) => n !== 'kit').map((n) => n.replace(/\.ts$/, '')),
  ...Object.keys(builtInSchemes).filter((s) => s !== 'zaris'),
  ...Object.keys(elsewhere),
  'idb',
  'inproc',
]

/**
 * Violations on this branch that other branches remove, each with who does.
 * A pending entry that no longer matches fails the test: delete it then.
 */
const PENDING: Array<[RegExp, string]> = []
const pending = (v: Violation) => PENDING.some(([re]) => re.test(v))

describe('src/ keeps the house rules', () => {
  test(`no file over 450 lines`, () => {
    expect(longFiles(src).filter((v) => !pending(v))).toEqual([])
  })

  test(`no function over 120 lines`, () => {
    expect(longFunctions(src).filter((v) => !pending(v))).toEqual([])
  })

  test('no import loop, lazy ones included', () => {
    expect(importLoops(src)).toEqual([])
  })

  test("outside code imports only the core's contract, time and public API", () => {
    expect(closedRoomImports(src)).toEqual([])
  })

  test('the core imports nothing outside src/core (no adapter, package or Node built-in) and names no adapter', () => {
    expect(NAMES).toEqual(expect.arrayContaining(['memory', 'indexeddb', 'http', 'redis', 'sqlite', 'etcd', 'rediss', 'etcds']))
    expect(coreViolations(src, NAMES)).toEqual([])
  })

  test('every pending exception is still a violation (delete the ones that are not)', () => {
    const all = [...longFiles(src), ...longFunctions(src)]
    for (const [re, who] of PENDING) expect(all.some((v) => re.test(v)), `${re} (${who})`).toBe(true)
  })
})

describe('each check catches a planted violation', () => {
  const root = mkdtempSync(join(tmpdir(), 'zaris-house-'))
  afterAll(() => rmSync(root, { recursive: true, force: true }))
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i}`).join('\n')
  // Clean modules beside the planted ones, each at its limit: nothing of theirs may be reported.
  write('core/ok.ts', `import { b } from './b'\nexport function fine(): number {\n${body(117)}\n  return b\n}\n`)
  write('core/b.ts', `export const b = 1\n${'// line\n'.repeat(449)}`)
  write('core/long-file.ts', `export const x = 1\n${'// line\n'.repeat(450)}`)
  write('adapters/memory.ts', `import { fine } from '../core/ok'\nexport const memoryAdapter = fine\n`)
  write('long-function.ts', `export function tooLong(): void {\n${body(119)}\n}\n`)
  write('loop/a.ts', `import type { B } from './b'\nexport type A = B | 1\n`)
  write('loop/b.ts', `import type { A } from './a'\nexport type B = A | 2\n`)
  write('lazy/a.ts', `export const load = () => import('./b')\n`)
  write('lazy/b.ts', `import { load } from './a'\nexport const again = load\n`)
  write('core/hold/inner.ts', `export const inner = 1\n`)
  write('outside.ts', `export { inner } from './core/hold/inner'\nexport const later = () => import('./core/hold/inner')\n`)
  write('core/imports-adapter.ts', `export { memoryAdapter } from '../adapters/memory'\n`)
  write('core/imports-builtin.ts', `import { cpus } from 'node:os'\nexport const count = cpus\n`)
  write('core/names-store.ts', `// A comment may say redis.\nexport const kind = 'redis'\nexport function viaIndexedDb(): void {}\n`)

  test('a file of 451 lines', () => {
    expect(longFiles(root)).toEqual(['core/long-file.ts: 451 lines'])
  })

  test('a function of 121 lines', () => {
    expect(longFunctions(root)).toEqual(['long-function.ts:1: a function of 121 lines'])
  })

  test('a loop of two type-only imports, and one through a lazy import()', () => {
    expect(importLoops(root)).toEqual(['lazy/a.ts <-> lazy/b.ts: an import loop', 'loop/a.ts <-> loop/b.ts: an import loop'])
  })

  test('outside code that imports a closed room of the core, statically or lazily', () => {
    expect(closedRoomImports(root)).toEqual([
      'outside.ts:1: imports "./core/hold/inner", a room of the core that is not open to it',
      'outside.ts:2: imports "./core/hold/inner", a room of the core that is not open to it',
    ])
  })

  test('a core that imports an adapter or a built-in, or names a store in its code', () => {
    expect(coreViolations(root, NAMES)).toEqual([
      'core/imports-adapter.ts:1: imports "../adapters/memory", outside the core',
      'core/imports-adapter.ts:1: names "memory"',
      'core/imports-builtin.ts:1: imports the package or built-in "node:os"',
      'core/names-store.ts:2: names "redis"',
      'core/names-store.ts:3: names "indexeddb"',
    ])
  })
})
