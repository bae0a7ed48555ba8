// @ts-check
/**
 * Stryker over the IndexedDB store's durability rule (issue 30):
 * `npx stryker run test/mutation/idb.stryker.config.mjs`. Only the lines of
 * `durabilityOf` run in Node; the rest of src/adapters/indexeddb runs in
 * Chromium only and is not mutated (its tests: test/indexeddb).
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import base from './stryker.config.mjs'

export default {
  ...base,
  vitest: { configFile: 'test/mutation/idb.vitest.config.ts', related: false },
  mutate: ['src/adapters/indexeddb/transactions.ts:59-68'],
  incrementalFile: 'reports/stryker-incremental-idb.json',
  htmlReporter: { fileName: 'reports/mutation-idb/index.html' },
  jsonReporter: { fileName: 'reports/mutation-idb/mutation.json' },
}
