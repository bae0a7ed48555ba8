// @ts-nocheck
// 
/**
 * Stryker over zaris/elect (issue 30), whose code runs in Chromium only:
 * `npx stryker run test/mutation/elect.stryker.config.mjs`. Stryker mutates
 * src/elect in place (run it in a worktree of its own: an interrupted run can
 * leave the files instrumented until it restores them) and runs the election
 * tests once per mutant as a command; the harness page switches the mutant
 * on (test/browser-harness/server.ts, `activeMutant`). No per-test coverage:
 * every mutant runs the listed files, 30-90 s each;
 * `MUTATE=src/elect/early.ts` narrows it.
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import base from './stryker.config.mjs'

export default {
  ...base,
  testRunner: 'command',
  commandRunner: { command: 'npx vitest run --bail=1 test/elect/plain-entry.test.ts test/elect/early.test.ts test/elect/early-frozen.test.ts test/elect/frozen.test.ts test/elect/tabs.test.ts test/tabs/calls.test.ts' },
  plugins: ['./test/mutation/ignore-messages.mjs', './test/mutation/survivors.mjs'],
  inPlace: true,
  mutate: process.env.MUTATE ? process.env.MUTATE.split(',') : ['src/elect/*.ts'],
  coverageAnalysis: 'off',
  concurrency: 1,
  timeoutMS: 60_000,
  incrementalFile: 'reports/stryker-incremental-elect.json',
  htmlReporter: { fileName: 'reports/mutation-elect/index.html' },
  jsonReporter: { fileName: 'reports/mutation-elect/mutation.json' },
}
