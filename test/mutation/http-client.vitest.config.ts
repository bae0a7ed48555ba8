/**
 * The tests Stryker runs against the HTTP client (http-client.stryker.config.mjs here): in Node, the client in this
 * process, each node a process of its own (the built bundle). `FAST=1`: only the files whose node runs in this process
 * too (seconds a mutant, not a minute: the call path is reached by every test); their survivors are then rechecked
 * against the rest with recheck.ts.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import base from '../../vite.config'

const FAST = [
  'test/http/client-options.test.ts',
  'test/http/refused-fields.test.ts',
  'test/http/client-calls.test.ts',
  'test/http/stream-answers.test.ts',
  'test/http/answers.test.ts',
  'test/http/pending-call.test.ts',
]

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  test: {
    include: process.env.FAST === '1' ? FAST : [
      'test/http/park.test.ts',
      'test/http/permit-handover.test.ts',
      'test/http/stream-answer.test.ts',
      'test/http/pending-call.test.ts',
      'test/http/shared-stream.test.ts',
      'test/http/older-node-park.test.ts',
      'test/http/answers.test.ts',
      'test/http/adapter.test.ts',
      'test/http/older-node.test.ts',
      'test/http/list-pages.test.ts',
      'test/http/frames.test.ts',
      'test/http/filtered-stream.test.ts',
      'test/http/figures.test.ts',
      'test/http/client-options.test.ts',
      'test/http/refused-fields.test.ts',
      'test/http/client-calls.test.ts',
      'test/http/stream-answers.test.ts',
    ],
    environment: 'node',
    testTimeout: 30_000,
  },
})
