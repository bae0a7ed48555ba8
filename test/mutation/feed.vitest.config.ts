/** The tests Stryker runs against the watch feed's mutants (feed.stryker.config.mjs here). */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: { include: ['test/indexeddb/feed.test.ts'], environment: 'node', testTimeout: 10_000 },
})
