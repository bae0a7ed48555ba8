/**
 * The conformance suite: the adapter contract and every client feature,
 * run against one adapter. Each adapter's test file calls `runConformance`
 * with a factory of fresh stores; the suite itself never changes per adapter.
 *
 * @example
 * runConformance('memory', async () => memoryFixture())
 */
import { describe } from 'vitest'
import { adapterCases } from './adapter.case'
import type { FixtureFactory, Skips } from './fixture'
import { ownerGoneCases } from './owner-gone.case'
import { primitiveCases } from './primitives.case'
import { safetyCases } from './safety.case'
import { namedTest } from './util'

export type { FixtureFactory, Skips, StoreFixture } from './fixture'

export interface ConformanceOptions {
  /** Multiplies the round counts of the heavy race tests, for slow transports (default 1). */
  scale?: number
  /** Tests this adapter cannot pass, each list with its reason. */
  skips?: Skips[]
}

export function runConformance(name: string, factory: FixtureFactory, options: ConformanceOptions = {}): void {
  const t = namedTest(options.skips)
  describe(`conformance: ${name}`, () => {
    adapterCases(factory, t)
    primitiveCases(factory, t, { scale: options.scale })
    safetyCases(factory, t)
    ownerGoneCases(factory, t)
  })
}
