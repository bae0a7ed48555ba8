// @ts-check
/**
 * Stryker on the IndexedDB store's watch feed (issue 30), in Node:
 * src/adapters/indexeddb/feed.ts against test/indexeddb/feed.test.ts (its
 * log in memory; feed.vitest.config.ts here), each mutant against the tests
 * that reach it. `npx stryker run test/mutation/feed.stryker.config.mjs`.
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'test/mutation/feed.vitest.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner', './test/mutation/ignore-messages.mjs', './test/mutation/survivors.mjs'],
  ignorers: ['error-messages'],
  mutate: ['src/adapters/indexeddb/feed.ts'],
  coverageAnalysis: 'perTest',
  concurrency: 2,
  reporters: ['clear-text', 'progress', 'json', 'survivors'],
  jsonReporter: { fileName: 'reports/mutation/feed.json' },
  thresholds: { high: 90, low: 80, break: null },
  timeoutMS: 10_000,
  tempDirName: '.stryker-tmp-feed',
  ignorePatterns: ['.stryker-tmp-*', 'reports'],
  cleanTempDir: true,
}
