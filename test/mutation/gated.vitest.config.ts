/**
 * The tests Stryker runs against each mutant of the gated acquire and the
 * hand-on release (test/mutation/gated.stryker.config.mjs): the gated
 * acquire's tests over the memory store with a fake lock manager of this
 * process (test/core/gated*.test.ts), the only tests in Node that take a gate. The
 * IndexedDB store's Web Locks (src/adapters/indexeddb/gate.ts) run in
 * Chromium only and are not mutated.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: ['test/core/gated.test.ts', 'test/core/gated-edges.test.ts', 'test/core/gated-release.test.ts', 'test/core/gated-races.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})
