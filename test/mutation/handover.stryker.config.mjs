// @ts-check
/**
 * Stryker on the store's handover (issue 31): src/adapters/kit/parked.ts and
 * src/adapters/kit/local-adapter.ts against the local store's and the
 * handover's tests (handover.vitest.config.ts here), every test for every
 * mutant. `npx stryker run test/mutation/handover.stryker.config.mjs`; the
 * score and the survivors are in RELIABILITY.md, "Mutation score".
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'test/mutation/handover.vitest.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner', './test/mutation/ignore-messages.mjs', './test/mutation/survivors.mjs'],
  ignorers: ['error-messages'],
  mutate: ['src/adapters/kit/parked.ts', 'src/adapters/kit/local-adapter.ts'],
  coverageAnalysis: 'off',
  concurrency: 1,
  reporters: ['clear-text', 'progress', 'json', 'survivors'],
  jsonReporter: { fileName: 'reports/mutation/handover.json' },
  thresholds: { high: 90, low: 80, break: null },
  timeoutMS: 10_000,
  tempDirName: '.stryker-tmp-handover',
  cleanTempDir: true,
}
