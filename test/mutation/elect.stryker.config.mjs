// @ts-nocheck
/**
 * Stryker over zaris/elect (issue 30), page code (./page-code.mjs):
 * `MUTATE=src/elect/early.ts npx stryker run test/mutation/elect.stryker.config.mjs`,
 * ~20 s a mutant; the whole of src/elect is ~600.
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import { pageCode } from './page-code.mjs'

export default pageCode('elect', ['src/elect/*.ts'], [
  'test/elect/term.test.ts',
  'test/elect/options.test.ts',
  'test/elect/plain-entry.test.ts',
  'test/elect/no-web-locks.test.ts',
  'test/elect/liveness.test.ts',
  'test/elect/early.test.ts',
  'test/elect/early-frozen.test.ts',
  'test/elect/frozen.test.ts',
  'test/elect/tabs.test.ts',
  'test/tabs/calls.test.ts',
  'test/tabs/leave.test.ts',
])
