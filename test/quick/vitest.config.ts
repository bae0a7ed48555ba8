/**
 * `npm run test:quick`: the edit-test loop. The core's and the memory
 * store's tests, the history checker's, the model-based random test on the
 * memory store, and the quick checks of the house (rules, mutants still
 * applying, docs links): under 2 minutes on 2 cores. No browser, no real
 * servers, so no prerequisite step (test/setup/prereqs.ts): it runs on a
 * machine with nothing but Node. `npm test` stays the whole suite.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: [
      'test/core/**/*.test.ts',
      'test/memory/**/*.test.ts',
      'test/lincheck/**/*.test.ts',
      'test/model/memory.test.ts',
      'test/model/holds.test.ts',
      'test/package/house.test.ts',
      'test/mutants/applies.test.ts',
      'test/readme/coverage.test.ts',
    ],
    exclude: ['test/**/*.browser.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})
