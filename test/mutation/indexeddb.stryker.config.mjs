// @ts-nocheck
/**
 * Stryker over the IndexedDB store (issue 30), page code (./page-code.mjs):
 * `MUTATE=src/adapters/indexeddb/transactions.ts npx stryker run test/mutation/indexeddb.stryker.config.mjs`.
 * A fast pass names its tests (`TESTS=test/indexeddb/adapter.browser.test.ts,…`);
 * without, every file below runs for each mutant (~40 s).
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import { pageCode } from './page-code.mjs'

export default pageCode('indexeddb', ['src/adapters/indexeddb/*.ts'], [
  'test/indexeddb/adapter.browser.test.ts',
  'test/indexeddb/conformance.browser.test.ts',
  'test/indexeddb/durability.browser.test.ts',
  'test/indexeddb/gate-mark.browser.test.ts',
  'test/indexeddb/gate.browser.test.ts',
  'test/indexeddb/page-store.browser.test.ts',
  'test/indexeddb/reaper.browser.test.ts',
  'test/indexeddb/connection.browser.test.ts',
  'test/indexeddb/reaper.test.ts',
  'test/indexeddb/tabs.test.ts',
  'test/indexeddb/lifecycle.test.ts',
])
