/**
 * The tests Stryker runs against each mutant (`npm run test:mutation`,
 * stryker.config.mjs here): the memory store's and the core's, in Node, as
 * `npm test` runs them, without the browser project and without the
 * prerequisite check (none of them starts chromium, redis or etcd). The
 * model-based random test is left out: its 14 s of random runs would be paid
 * by nearly every mutant, and a random test could kill a mutant in one run
 * and not in the next.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: ['test/core/**/*.test.ts', 'test/memory/**/*.test.ts'],
    exclude: ['test/**/*.browser.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})
