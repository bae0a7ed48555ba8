/**
 * The tests Stryker runs against a semaphore's permit part's mutants
 * (permit.stryker.config.mjs here): the permit handover and race tests on
 * the memory store, the core's parts tests, the conformance suite on memory
 * (also declaring no way to wait in the store: the watch path)
 * and the lock family's checker tests. Stryker runs, for each mutant, only
 * the tests that reach it (per-test coverage): the whole suite per mutant
 * would take ~45 minutes.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: ['test/memory/permit-handover.test.ts', 'test/memory/permit-race.test.ts', 'test/memory/fairness.test.ts', 'test/core/lock-parts.test.ts', 'test/core/permit-part.test.ts', 'test/memory/conformance.test.ts', 'test/memory/conformance-watched.test.ts', 'test/core/family-checker.test.ts', 'test/lincheck/family.test.ts'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
