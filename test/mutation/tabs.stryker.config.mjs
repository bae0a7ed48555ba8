// @ts-nocheck
// 
/**
 * Stryker over zaris/tabs (issue 30), whose code runs in Chromium only:
 * `npx stryker run test/mutation/tabs.stryker.config.mjs`. Stryker mutates
 * src/tabs in place (run it in a worktree of its own: an interrupted run can
 * leave the files instrumented until it restores them) and runs the tabs
 * tests once per mutant as a command; the harness page switches the mutant
 * on (test/browser-harness/server.ts, `activeMutant`). No per-test coverage:
 * every mutant runs the whole file, ~15 s each.
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import base from './stryker.config.mjs'

export default {
  ...base,
  testRunner: 'command',
  commandRunner: { command: 'npx vitest run --bail=1 test/tabs/calls.test.ts test/tabs/leave.test.ts test/tabs/watch-gaps.test.ts test/tabs/tabs.test.ts' },
  plugins: ['./test/mutation/ignore-messages.mjs', './test/mutation/survivors.mjs'],
  inPlace: true,
  mutate: ['src/tabs/*.ts'],
  coverageAnalysis: 'off',
  concurrency: 1,
  timeoutMS: 60_000,
  incrementalFile: 'reports/stryker-incremental-tabs.json',
  htmlReporter: { fileName: 'reports/mutation-tabs/index.html' },
  jsonReporter: { fileName: 'reports/mutation-tabs/mutation.json' },
}
