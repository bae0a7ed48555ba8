/** The tests Stryker runs against the node's parked commits (parking.stryker.config.mjs here): in Node, the node in-process. */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: ['test/server/parking.test.ts', 'test/server/park-other-ways.test.ts', 'test/server/early-answer.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
  },
})
