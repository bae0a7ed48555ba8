/**
 * The tests Stryker runs against each mutant of src/adapters/file
 * (stryker.config.mjs here): the store's unit and behaviour tests in Node,
 * without the conformance suite and the process tests, which take minutes.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: ['test/file/*.test.ts'],
    exclude: ['test/file/conformance.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})
