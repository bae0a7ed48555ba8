/**
 * The tests Stryker runs against each mutant of the etcd adapter's watch
 * from the past (stryker.config.mjs here): test/etcd/watch-start, a few
 * seconds on a real etcd member of its own.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: ['test/etcd/watch-start.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})
