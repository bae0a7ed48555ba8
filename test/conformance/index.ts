/**
 * The conformance suite: the adapter contract and every client feature,
 * run against one adapter. Each adapter's test file calls `testAdapter` with
 * a function that opens its adapter on a namespace (or `runConformance` with
 * a fixture factory of its own); the suite itself never changes per adapter.
 * Published as `zaris/conformance` (ESM only; vitest is a peer dependency),
 * for adapters written outside zaris.
 *
 * Every assertion of a contract rule names the rule (`[rule new-life] …`);
 * a test that does not apply (a capability the adapter does not declare, a
 * hook the fixture does not give) is skipped with its reason, and the suite
 * prints how many were run, passed and skipped, and why.
 *
 * @example
 * testAdapter('memory', (namespace) => memoryAdapter({ namespace }))
 */
import { afterAll, beforeAll, describe } from 'vitest'
import { adapterCases } from './adapter.case'
import { familyCases } from './family.case'
import { jobCases } from './jobs.case'
import { adapterFixture, type AdapterFixtureOptions, type FixtureFactory, type OpenAdapter, type Skips } from './fixture'
import { hookCases } from './hooks.case'
import { ownerGoneCases } from './owner-gone.case'
import { primitiveCases } from './primitives.case'
import { ruleCases } from './rules.case'
import { safetyCases } from './safety.case'
import { setSkew, SUITE_SKEW } from './skew'
import { Tally, vitestCases, type Named } from './util'
import { lineCases } from './web-locks.case'

export { adapterFixture } from './fixture'
export type { AdapterFixtureOptions, FixtureFactory, OpenAdapter, Skips, StoreFixture } from './fixture'

/** Options of {@link runConformance} and {@link testAdapter}. */
export interface ConformanceOptions {
  /**
   * Multiplies the round counts of the heavy race tests (default 1; 0.2 for
   * a store a network away): less work, the same checks.
   */
  scale?: number
  /**
   * Milliseconds an ordinary test may take (default 10 000). Every test has
   * a weight — 1, or more for the heavy ones (docs/writing-an-adapter.md
   * lists them) — and may take its weight times this: the one time limit to
   * raise for a slow store. vitest's own `testTimeout` does not apply.
   */
  timeout?: number
  /** Tests this adapter cannot pass, each list with its reason. */
  skips?: Skips[]
}

/**
 * Every case of the suite, registered through `t` on stores made by
 * `factory`: for a runner of your own (vitest's is {@link runConformance}).
 *
 * @example
 * conformanceCases(adapterFixture((namespace) => myAdapter({ namespace })), myRunner)
 */
export function conformanceCases(factory: FixtureFactory, t: Named, options: { scale?: number } = {}): void {
  adapterCases(factory, t)
  ruleCases(factory, t)
  hookCases(factory, t)
  primitiveCases(factory, t, { scale: options.scale })
  safetyCases(factory, t)
  ownerGoneCases(factory, t)
  familyCases(factory, t)
  lineCases(factory, t)
  jobCases(factory, t)
}

/**
 * Runs the whole suite on stores made by `factory`, with the clients' wall
 * clock 2 s off the store's (test/conformance/skew.ts).
 *
 * @example
 * runConformance('mystore', adapterFixture((namespace) => myAdapter({ namespace })))
 */
export function runConformance(name: string, factory: FixtureFactory, options: ConformanceOptions = {}): void {
  const tally = new Tally()
  const t = vitestCases({ skips: options.skips, timeout: options.timeout ?? 10_000, tally })
  describe(`conformance: ${name}`, () => {
    beforeAll(() => setSkew(SUITE_SKEW))
    afterAll(() => {
      setSkew(0)
      console.log(tally.summary(name))
    })
    conformanceCases(factory, t, options)
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
