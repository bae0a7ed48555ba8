/**
 * For the mutation runs only (test/mutation/postgres.vitest.config.ts): the
 * conformance suite's raw-adapter, safety and lock-family cases on the
 * Postgres adapter, without the long races (`npm test` runs the whole suite:
 * test/postgres/conformance.test.ts).
 */
import { afterAll, beforeAll, describe, test } from 'vitest'
import { postgresAdapter } from 'zaris/postgres'
import { adapterFixture } from '../conformance'
import { adapterCases } from '../conformance/adapter.case'
import { familyCases } from '../conformance/family.case'
import { safetyCases } from '../conformance/safety.case'
import { startPostgres, type PostgresServer } from './server'

let server: PostgresServer
beforeAll(async () => {
  server = await startPostgres()
})
afterAll(async () => {
  await server?.dispose()
})

const factory = adapterFixture((namespace) => postgresAdapter({ url: server.url(namespace) }))
describe('conformance (mutation subset): postgres', () => {
  adapterCases(factory, test)
  safetyCases(factory, test)
  familyCases(factory, test)
})
