/**
 * The tests Stryker runs against each mutant of the Postgres adapter
 * (postgres.stryker.config.mjs here): its own tests and the conformance
 * suite's raw-adapter, safety and lock-family cases, on one Postgres started
 * for the whole run (each test file gets a fresh database of it:
 * `ZARIS_POSTGRES_SHARED`, test/postgres/server.ts), without the long races
 * and the fault suite.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: ['test/postgres/unit.test.ts', 'test/postgres/handover.test.ts', 'test/postgres/parked-ways.test.ts', 'test/postgres/adapter.test.ts', 'test/postgres/fence.test.ts', 'test/postgres/pgbouncer.test.ts', 'test/postgres/resilience.test.ts', 'test/postgres/listener.test.ts', 'test/postgres/pools.test.ts', 'test/postgres/follower.test.ts', 'test/postgres/contract.mutation.ts'],
    globalSetup: ['test/mutation/postgres-setup.ts'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
