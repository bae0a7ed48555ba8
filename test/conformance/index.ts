/**
 * The conformance suite: the adapter contract and every client feature,
 * run against one adapter. Each adapter's test file calls `testAdapter` with
 * a function that opens its adapter on a namespace (or `runConformance` with
 * a fixture factory of its own); the suite itself never changes per adapter.
 * Published as `zaris/conformance` (ESM only; vitest is a peer dependency),
 * for adapters written outside zaris.
 *
 * @example
 * testAdapter('memory', (namespace) => memoryAdapter({ namespace }))
 */
import { describe } from 'vitest'
import { adapterCases } from './adapter.case'
import { familyCases } from './family.case'
import { jobCases } from './jobs.case'
import { adapterFixture, type AdapterFixtureOptions, type FixtureFactory, type OpenAdapter, type Skips } from './fixture'
import { ownerGoneCases } from './owner-gone.case'
import { primitiveCases } from './primitives.case'
import { safetyCases } from './safety.case'
import { lineCases } from './web-locks.case'
import { namedTest } from './util'

export { adapterFixture } from './fixture'
export type { AdapterFixtureOptions, FixtureFactory, OpenAdapter, Skips, StoreFixture } from './fixture'

/** Options of {@link runConformance} and {@link testAdapter}. */
export interface ConformanceOptions {
  /** Multiplies the round counts of the heavy race tests, for slow transports (default 1). */
  scale?: number
  /** Tests this adapter cannot pass, each list with its reason. */
  skips?: Skips[]
}

/**
 * Runs the whole suite on stores made by `factory`.
 *
 * @example
 * runConformance('mystore', adapterFixture((namespace) => myAdapter({ namespace })))
 */
export function runConformance(name: string, factory: FixtureFactory, options: ConformanceOptions = {}): void {
  const t = namedTest(options.skips)
  describe(`conformance: ${name}`, () => {
    adapterCases(factory, t)
    primitiveCases(factory, t, { scale: options.scale })
    safetyCases(factory, t)
    ownerGoneCases(factory, t)
    familyCases(factory, t)
    lineCases(factory, t)
    jobCases(factory, t)
  })
}

/**
 * Runs the whole suite on adapters `open` makes, a fresh namespace per test:
 * an adapter's suite file in one call.
 *
 * @example
 * import { testAdapter } from 'zaris/conformance'
 * testAdapter('mystore', (namespace) => myAdapter({ namespace }))
 */
export function testAdapter(name: string, open: OpenAdapter, options: ConformanceOptions & AdapterFixtureOptions = {}): void {
  runConformance(name, adapterFixture(open, options), options)
}
