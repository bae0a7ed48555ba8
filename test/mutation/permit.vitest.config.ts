/**
 * The tests Stryker runs against a semaphore's permit part's mutants
 * (permit.stryker.config.mjs here): the permit handover and race tests on
 * the memory store, and the core's parts tests (the lock family's
 * conformance cases on memory are too slow to run per mutant here). Every mutant runs
 * all of them (no per-test coverage).
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: ['test/memory/permit-handover.test.ts', 'test/memory/permit-race.test.ts', 'test/memory/fairness.test.ts', 'test/core/lock-parts.test.ts'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
