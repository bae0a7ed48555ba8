// @ts-check
/**
 * Stryker on the node's parked commits (issue 31): src/server/parking.ts
 * against its own tests and the in-process node's (parking.vitest.config.ts
 * here), each mutant against the tests that reach it.
 * `npx stryker run test/mutation/parking.stryker.config.mjs`; the score and
 * the survivors are in RELIABILITY.md, "Mutation score".
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'test/mutation/parking.vitest.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner', './test/mutation/ignore-messages.mjs', './test/mutation/survivors.mjs'],
  ignorers: ['error-messages'],
  mutate: ['src/server/parking.ts'],
  coverageAnalysis: 'perTest',
  concurrency: 2,
  reporters: ['clear-text', 'progress', 'json', 'survivors'],
  jsonReporter: { fileName: 'reports/mutation/parking.json' },
  thresholds: { high: 90, low: 80, break: null },
  timeoutMS: 10_000,
  tempDirName: '.stryker-tmp-parking',
  ignorePatterns: ['.stryker-tmp-*', 'reports'],
  cleanTempDir: true,
}
