// @ts-nocheck
/**
 * What a Stryker run over page code needs (code that runs in Chromium only):
 * Stryker mutates the files in place (run it in a worktree of its own: an
 * interrupted run can leave the files instrumented until it restores them)
 * and runs `tests` once per mutant as a command; the harness page switches
 * the mutant on (test/browser-harness/server.ts, `activeMutant`). No
 * per-test coverage: every mutant runs every listed file. `MUTATE=a.ts,b.ts`
 * narrows a run to those files (`a.ts:10-40` to lines), `TIMEOUT_MS` bounds a mutant's run, `TESTS=x.test.ts,y.test.ts` runs
 * those test files instead (a fast first pass; `recheck.ts` runs its survivors against the rest).
 * Stop a run with `pkill -x stryker` (its process title; `pkill -f 'stryker run'` misses it), then
 * `git checkout .` in its worktree; never two runs in one worktree. After adding tests, `--force`
 * (without it the incremental file's results for unchanged code may be reused).
 */
import base from './stryker.config.mjs'

/** The options of a run named `name` over `mutate`, killed by `tests` (vitest files). */
export function pageCode(name, mutate, tests) {
  return {
    ...base,
    testRunner: 'command',
    commandRunner: { command: `npx vitest run --bail=1 ${(process.env.TESTS ? process.env.TESTS.split(',') : tests).join(' ')}` },
    plugins: ['./test/mutation/ignore-messages.mjs', './test/mutation/survivors.mjs'],
    inPlace: true,
    mutate: process.env.MUTATE ? process.env.MUTATE.split(',') : mutate,
    coverageAnalysis: 'off',
    concurrency: 1,
    // TIMEOUT_MS: shorter for a fast pass whose tests run in seconds (a hanging mutant costs the whole of it).
    timeoutMS: Number(process.env.TIMEOUT_MS ?? 60_000),
    incrementalFile: `reports/stryker-incremental-${name}.json`,
    htmlReporter: { fileName: `reports/mutation-${name}/index.html` },
    jsonReporter: { fileName: `reports/mutation-${name}/mutation.json` },
  }
}
