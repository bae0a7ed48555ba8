// @ts-check
/**
 * `npx stryker run test/mutation/postgres.stryker.config.mjs`: Stryker
 * mutates the Postgres adapter (src/adapters/postgres) and runs its tests
 * (postgres.vitest.config.ts here) against each mutant, on one Postgres for
 * the run. Not in `npm test` nor in CI (tens of minutes on 2 cores). The
 * score and the survivors are in RELIABILITY.md, "Mutation score".
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import base from './stryker.config.mjs'

/** `CHUNK=follower npx stryker run … --mutate src/adapters/postgres/follower.ts`: a run of its own files, so one run's report does not replace another's. */
const chunk = process.env.CHUNK ?? 'all'

export default {
  ...base,
  vitest: { configFile: 'test/mutation/postgres.vitest.config.ts', related: false },
  mutate: ['src/adapters/postgres/**/*.ts'],
  incrementalFile: `reports/stryker-postgres-${chunk}.json`,
  htmlReporter: { fileName: `reports/mutation-postgres-${chunk}/index.html` },
  jsonReporter: { fileName: `reports/mutation-postgres-${chunk}/mutation.json` },
  timeoutMS: 20_000,
}
