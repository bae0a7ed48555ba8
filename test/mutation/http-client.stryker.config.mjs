// @ts-check
/**
 * Stryker on the HTTP client's waiting commits (issue 31: a take parked at a
 * node, its answer on the shared stream): src/adapters/http/client.ts,
 * stream-answers.ts and waiting.ts, against the Node tests that drive the
 * client in this process (http-client.vitest.config.ts here); each mutant
 * against the tests that reach it. The same files run in pages, where no
 * Stryker runner reaches: the Node runs cover their logic.
 * `npx stryker run test/mutation/http-client.stryker.config.mjs`.
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import parking from './parking.stryker.config.mjs'

export default {
  ...parking,
  vitest: { configFile: 'test/mutation/http-client.vitest.config.ts', related: false },
  mutate: ['src/adapters/http/client.ts', 'src/adapters/http/stream-answers.ts', 'src/adapters/http/waiting.ts'],
  jsonReporter: { fileName: 'reports/mutation/http-client.json' },
  tempDirName: '.stryker-tmp-http-client',
  timeoutMS: 20_000,
}
