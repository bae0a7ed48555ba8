// @ts-nocheck
/**
 * Stryker over zaris/tabs (issue 30), page code (./page-code.mjs):
 * `npx stryker run test/mutation/tabs.stryker.config.mjs`, ~15 s a mutant.
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import { pageCode } from './page-code.mjs'

export default pageCode('tabs', ['src/tabs/*.ts'], ['test/tabs/calls.test.ts', 'test/tabs/leave.test.ts', 'test/tabs/watch-gaps.test.ts', 'test/tabs/tabs.test.ts'])
