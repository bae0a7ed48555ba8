/** The tests Stryker runs against the node's call path (calls.stryker.config.mjs here): in Node, the node in-process. */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: [
      'test/server/parking.test.ts',
      'test/server/park-other-ways.test.ts',
      'test/server/early-answer.test.ts',
      'test/server/frames.test.ts',
      'test/server/connections.test.ts',
      'test/server/edge-requests.test.ts',
      'test/server/replay-cache.test.ts',
      'test/server/watch-replay.test.ts',
      'test/server/hold-metrics.test.ts',
      'test/server/listener.test.ts',
      'test/http/stream-answer.test.ts',
      'test/server/calls.test.ts',
    ],
    // stream-answer.test.ts serves its node from this process (a node process runs the bundle, out of a mutant's reach).
    env: { ZARIS_NODE_IN_PROCESS: '1' },
    environment: 'node',
    testTimeout: 20_000,
  },
})
