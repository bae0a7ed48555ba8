// @ts-check
/**
 * Stryker over the gated acquire and the hand-on release (issue 30):
 * `npx stryker run test/mutation/gated.stryker.config.mjs`. The score and
 * the survivors are in RELIABILITY.md, "Mutation score".
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import base from './stryker.config.mjs'

export default {
  ...base,
  vitest: { configFile: 'test/mutation/gated.vitest.config.ts', related: false },
  // The gated files whole, and the lines of hold.ts, claim.ts and acquire/index.ts that serve gates.
  mutate: [
    'src/core/acquire/gated.ts',
    'src/core/hold/hand-on.ts',
    'src/core/hold/hold.ts:249-260',
    'src/core/hold/hold.ts:298-302',
    'src/core/hold/hold.ts:319-324',
    'src/core/acquire/claim.ts:151-152',
    'src/core/acquire/claim.ts:155-156',
    'src/core/acquire/index.ts:67-70',
  ],
  incrementalFile: 'reports/stryker-incremental-gated.json',
  htmlReporter: { fileName: 'reports/mutation-gated/index.html' },
  jsonReporter: { fileName: 'reports/mutation-gated/mutation.json' },
}
