// @ts-check
/**
 * Stryker on the `file://` store's own modules (src/adapters/file), against
 * its unit and behaviour tests (vitest.mutation.config.ts here):
 *
 *   npx stryker run test/file/stryker.config.mjs
 *
 * Not in `npm test`: it takes tens of minutes on 2 cores. The conformance
 * suite and the process tests are left out (minutes a run: every mutant
 * they cover would pay for them); the score and the survivors are in
 * RELIABILITY.md, "Mutation score".
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import base from '../mutation/stryker.config.mjs'

export default {
  ...base,
  vitest: { configFile: 'test/file/vitest.mutation.config.ts', related: false },
  mutate: ['src/adapters/file/*.ts'],
  incrementalFile: 'reports/stryker-file-incremental.json',
  htmlReporter: { fileName: 'reports/mutation-file/index.html' },
  jsonReporter: { fileName: 'reports/mutation-file/mutation.json' },
}
