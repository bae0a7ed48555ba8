// @ts-check
/**
 * `npm run test:mutation`: Stryker mutates the modules that hold locks,
 * leases, counters and election terms and the memory store's write path, and
 * runs the memory and core tests (vitest.config.ts here) against each mutant.
 * Not in `npm test` nor in CI: it takes tens of minutes on 2 cores. The score
 * per file and the survivors are in RELIABILITY.md, "Mutation score".
 * Incremental: reports/stryker-incremental.json remembers each mutant's
 * result, so a rerun tests only mutants in changed code or covered by
 * changed tests (`npm run test:mutation -- --force` tests all).
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'test/mutation/vitest.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner', './test/mutation/ignore-messages.mjs', './test/mutation/survivors.mjs'],
  ignorers: ['error-messages'],
  mutate: [
    'src/core/hold/hold.ts',
    'src/core/hold/end.ts',
    'src/core/hold/life.ts',
    'src/core/acquire/index.ts',
    'src/core/acquire/checks.ts',
    'src/core/acquire/machine.ts',
    'src/core/locks.ts',
    'src/core/leases.ts',
    'src/core/counters.ts',
    'src/core/counter-ops.ts',
    'src/core/election.ts',
    'src/core/election/body.ts',
    'src/adapters/kit/local-store.ts',
    'src/adapters/kit/write.ts',
    'src/adapters/kit/parked.ts',
  ],
  coverageAnalysis: 'perTest',
  concurrency: 2,
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  reporters: ['clear-text', 'progress', 'html', 'json', 'survivors'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  thresholds: { high: 85, low: 70, break: null },
  timeoutMS: 10_000,
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
}
