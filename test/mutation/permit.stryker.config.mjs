// @ts-check
/**
 * Stryker on a semaphore's permits (issue 31): src/core/acquire/permit-part.ts
 * against the permit handover, race and family conformance tests on memory
 * (permit.vitest.config.ts here), each mutant against the tests that reach it.
 * `npx stryker run test/mutation/permit.stryker.config.mjs`.
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'test/mutation/permit.vitest.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner', './test/mutation/ignore-messages.mjs', './test/mutation/survivors.mjs'],
  ignorers: ['error-messages'],
  mutate: ['src/core/acquire/permit-part.ts'],
  coverageAnalysis: 'perTest',
  concurrency: 1,
  reporters: ['clear-text', 'progress', 'json', 'survivors'],
  jsonReporter: { fileName: 'reports/mutation/permit.json' },
  thresholds: { high: 90, low: 80, break: null },
  timeoutMS: 10_000,
  tempDirName: '.stryker-tmp-permit',
  ignorePatterns: ['.stryker-tmp-*', 'reports'],
  cleanTempDir: true,
}
