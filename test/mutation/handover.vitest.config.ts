/**
 * The tests Stryker runs against the handover's mutants
 * (handover.stryker.config.mjs here): the local store's and its handover's,
 * in Node. Every mutant runs all of them (no per-test coverage: Stryker's
 * per-test map lost these files' tests, and reported mutants they kill as
 * survivors).
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: ['test/memory/handover.test.ts', 'test/memory/handover-race.test.ts', 'test/memory/permit-handover.test.ts', 'test/memory/permit-race.test.ts', 'test/memory/local-store-parts.test.ts', 'test/memory/local-store.test.ts', 'test/memory/parked.test.ts', 'test/memory/parked-turns.test.ts', 'test/memory/turns.test.ts', 'test/memory/fairness.test.ts', 'test/memory/local-adapter.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})
