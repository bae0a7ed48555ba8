/**
 * For the mutation runs only (test/mutation/postgres.vitest.config.ts): the
 * conformance suite's raw-adapter, rules, hooks, safety and lock-family
 * cases on the Postgres adapter, without the long races (`npm test` runs the whole suite:
 * test/postgres/conformance.test.ts).
 */
import { afterAll, beforeAll, describe } from 'vitest'
import { postgresAdapter } from 'zaris/postgres'
import { adapterFixture } from '../conformance'
import { adapterCases } from '../conformance/adapter.case'
import { familyCases } from '../conformance/family.case'
import { hookCases } from '../conformance/hooks.case'
import { ruleCases } from '../conformance/rules.case'
import { safetyCases } from '../conformance/safety.case'
import { Tally, vitestCases } from '../conformance/util'
import { HISTORY_KEPT, postgresHooks } from './hooks'
import { startPostgres, type PostgresServer } from './server'

let server: PostgresServer
beforeAll(async () => {
  server = await startPostgres()
})
afterAll(async () => {
  await server?.dispose()
})

const factory = adapterFixture((namespace) => postgresAdapter({ url: server.url(namespace), historySize: HISTORY_KEPT }), postgresHooks(() => server))
const t = vitestCases({ timeout: 20_000, tally: new Tally() })
describe('conformance (mutation subset): postgres', () => {
  adapterCases(factory, t)
  ruleCases(factory, t)
  hookCases(factory, t)
  safetyCases(factory, t)
  familyCases(factory, t)
})
