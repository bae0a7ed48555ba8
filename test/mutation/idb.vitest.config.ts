/**
 * The tests Stryker runs against each mutant of the IndexedDB store's
 * durability rule (test/mutation/idb.stryker.config.mjs): the Node test of
 * `durabilityOf`. The transactions a real client makes are checked in
 * Chromium (test/indexeddb/durability.browser.test.ts), which Stryker does
 * not run.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: ['test/indexeddb/durability.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
  },
})
