// @ts-check
/**
 * Stryker on the etcd adapter's watch from the past
 * (src/adapters/etcd/watch-start.ts), against test/etcd/watch-start
 * (vitest.mutation.config.ts here):
 *
 *   npx stryker run test/etcd/stryker.config.mjs
 *
 * Not in `npm test`. The score and the survivors are in RELIABILITY.md,
 * "Mutation score".
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import base from '../mutation/stryker.config.mjs'

export default {
  ...base,
  vitest: { configFile: 'test/etcd/vitest.mutation.config.ts', related: false },
  mutate: ['src/adapters/etcd/watch-start.ts'],
  coverageAnalysis: 'off',
  incrementalFile: 'reports/stryker-etcd-incremental.json',
  htmlReporter: { fileName: 'reports/mutation-etcd/index.html' },
  jsonReporter: { fileName: 'reports/mutation-etcd/mutation.json' },
}
