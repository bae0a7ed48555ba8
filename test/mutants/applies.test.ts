/**
 * Every injected bug of mutants.ts still applies to the source as it is: its
 * text is found exactly once in its module, and the tests it names exist. A
 * refactor that moves the text leaves a mutant that tests nothing (it showed
 * as STALE only in the long `npm run test:mutants`, and `fence-check-removed`
 * stayed so for a session); this keeps `npm test` from passing past it.
 */
import { existsSync, readFileSync } from 'node:fs'
import { expect, test } from 'vitest'
import { MUTANTS } from './mutants'

const root = new URL('../../', import.meta.url)
const occurrences = (text: string, part: string) => text.split(part).length - 1

test.each(MUTANTS.map((m) => [m.name, m] as const))('%s applies: its text is in its module once, its tests exist', (_name, mutant) => {
  const source = readFileSync(new URL(mutant.file, root), 'utf8')
  expect(occurrences(source, mutant.from), `${mutant.file} must contain ${JSON.stringify(mutant.from)} exactly once`).toBe(1)
  expect(mutant.to).not.toBe(mutant.from)
  for (const file of mutant.tests) expect(existsSync(new URL(file, root)), `${file} exists`).toBe(true)
})

test('mutant names are unique', () => {
  const names = MUTANTS.map((m) => m.name)
  expect(new Set(names).size).toBe(names.length)
})
