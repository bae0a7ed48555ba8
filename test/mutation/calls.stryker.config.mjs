// @ts-check
/**
 * Stryker on the node's call path (issue 31's release frame that hands over,
 * `answerOn`, `orElse` on the wire): src/server/calls.ts against the tests
 * that run a node in this process (calls.vitest.config.ts here; a node
 * process runs the built bundle, which a mutant never reaches).
 * `npx stryker run test/mutation/calls.stryker.config.mjs`; the score and
 * the survivors are in RELIABILITY.md, "Mutation score".
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import parking from './parking.stryker.config.mjs'

export default {
  ...parking,
  vitest: { configFile: 'test/mutation/calls.vitest.config.ts', related: false },
  mutate: ['src/server/calls.ts'],
  jsonReporter: { fileName: 'reports/mutation/calls.json' },
  tempDirName: '.stryker-tmp-calls',
}
