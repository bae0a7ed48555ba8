/**
 * The suite catches each bug of bugs.ts: the guide's Map adapter with one
 * rule broken fails the suite's tests of that rule, and at least one of
 * them names the rule in its message. First the same tests pass on the
 * guide's adapter as printed, so a failure is the bug's doing.
 *
 * Each bug's adapter is written to a temporary folder of its own and
 * imported; the suite's cases run in this process (./cases.ts), only the
 * ones the bug names, to keep this file to seconds. `ZARIS_BUGS_FULL=1`
 * runs every case of the suite on each bug instead and prints how many
 * fail (minutes).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { blocksOf, fileOf } from '../../readme/snippets'
import { adapterFixture, type AdapterFixtureOptions, type OpenAdapter } from '../fixture'
import { BUGS, withBug, type Bug } from './bugs'
import { collectCases, runCases, type Case } from './cases'

const full = process.env.ZARIS_BUGS_FULL === '1'
// Outside the repo: under test/conformance, it would make dist/ look stale (test/package/built.ts).
const dir = mkdtempSync(join(tmpdir(), 'zaris-bugs-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const guide = blocksOf('docs/writing-an-adapter.md').find((b) => fileOf(b) === 'map-adapter.ts')!.code

interface MapModule {
  mapAdapter: OpenAdapter
  restartMapStore(namespace: string): void
  setMapRevision(namespace: string, revision: number): void
  MAP_HISTORY: number
}

/** The suite's cases on the Map adapter of `code`, with the hooks the guide's test file gives. */
async function casesOf(name: string, code: string): Promise<Case[]> {
  mkdirSync(join(dir, name), { recursive: true })
  const file = join(dir, name, 'map-adapter.ts')
  writeFileSync(file, code)
  const m = (await import(/* @vite-ignore */ file)) as MapModule
  const hooks: AdapterFixtureOptions = { historyKept: m.MAP_HISTORY, restart: m.restartMapStore, setRevision: m.setMapRevision }
  return collectCases(adapterFixture(m.mapAdapter, hooks))
}

const only = (cases: Case[], titles: readonly string[]) => cases.filter((c) => titles.includes(c.title))

test('every bug names tests the suite has, and each edit applies to the guide\'s adapter', async () => {
  const titles = new Set((await casesOf('titles', guide)).map((c) => c.title))
  for (const bug of BUGS) {
    expect(bug.caughtBy.filter((t) => !titles.has(t)), bug.name).toEqual([])
    expect(() => withBug(guide, bug)).not.toThrow()
  }
})

test('the guide\'s adapter, as printed, passes every test the bugs are caught by', async () => {
  const titles = [...new Set(BUGS.flatMap((b) => b.caughtBy))]
  const outcomes = await runCases(only(await casesOf('as-printed', guide), titles))
  expect(outcomes.filter((o) => o.outcome !== 'passed')).toEqual([])
  expect(outcomes).toHaveLength(titles.length)
}, 60_000)

describe('each bug fails the suite with a message that names the broken rule', () => {
  test.each(BUGS.map((b) => [b.name, b] as [string, Bug]))('%s', async (name, bug) => {
    const cases = await casesOf(name, withBug(guide, bug))
    const outcomes = await runCases(full ? cases : only(cases, bug.caughtBy))
    const failed = outcomes.filter((o) => o.outcome === 'failed')
    if (full) console.log(`${name}: ${failed.length} of ${outcomes.length} tests fail (${outcomes.filter((o) => o.outcome === 'skipped').length} skipped)`)
    // Every test named for the bug fails, and one says which rule.
    expect(bug.caughtBy.filter((t) => !failed.some((o) => o.title === t)), `${bug.what}: not caught by`).toEqual([])
    const naming = failed.filter((o) => o.message?.includes(`[rule ${bug.rule}]`))
    expect(naming.length, `${bug.what}: no failure names [rule ${bug.rule}]; the failures: ${failed.map((o) => `${o.title}: ${o.message?.split('\n')[0]}`).join(' | ')}`).toBeGreaterThan(0)
    console.log(`${name}: caught by "${naming[0]!.title}": ${naming[0]!.message!.split('\n')[0]!.slice(0, 300)}`)
  }, full ? 600_000 : 60_000)
})
