/**
 * The suite's cases run without vitest's runner: collected through the same
 * `Named` the suite's files register with, then run one by one in this
 * process, each with the outcome and the message it failed with. The bug
 * fixtures' test runs the suite this way on adapters with one bug each.
 */
import { conformanceCases } from '../index'
import type { FixtureFactory } from '../fixture'
import { setSkew, skew, SUITE_SKEW } from '../skew'
import { NotChecked, type Named } from '../util'

/** One test of the suite. */
export interface Case {
  title: string
  /** The groups it is in, outermost first. */
  path: string[]
  fn: () => Promise<void>
  weight: number
}

/** What running a case came to. */
export interface Outcome {
  title: string
  outcome: 'passed' | 'failed' | 'skipped'
  /** The failure's message (or the skip's reason). */
  message?: string
}

/** Every case of the suite on stores of `factory`, in the suite's order. */
export function collectCases(factory: FixtureFactory): Case[] {
  const cases: Case[] = []
  const path: string[] = []
  const t = ((title, fn, weight = 1) => {
    cases.push({ title, path: [...path], fn, weight })
  }) as Named
  t.group = (name, body) => {
    path.push(name)
    body()
    path.pop()
  }
  conformanceCases(factory, t)
  return cases
}

/** Runs `cases` one after another, as the suite does: the clients' clock skewed, each within its weight times `timeout`. */
export async function runCases(cases: Case[], timeout = 10_000): Promise<Outcome[]> {
  const before = skew()
  setSkew(SUITE_SKEW)
  try {
    const out: Outcome[] = []
    for (const c of cases) out.push(await runCase(c, c.weight * timeout))
    return out
  } finally {
    setSkew(before)
  }
}

async function runCase(c: Case, ms: number): Promise<Outcome> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms)
  })
  try {
    await Promise.race([c.fn(), limit])
    return { title: c.title, outcome: 'passed' }
  } catch (err) {
    if (err instanceof NotChecked) return { title: c.title, outcome: 'skipped', message: err.reason }
    return { title: c.title, outcome: 'failed', message: err instanceof Error ? err.message : String(err) }
  } finally {
    clearTimeout(timer)
  }
}
