/**
 * The conformance suite, unchanged, against the Postgres adapter on a real
 * Postgres (started on a free loopback port for this file). `npm test` runs
 * its heavy races at a quarter of their rounds (the suite's `scale`, kept to
 * seconds); `npm run test:faults` runs it whole, directly and through
 * PgBouncer in transaction mode (test/long/postgres-conformance.test.ts).
 */
import { afterAll, beforeAll } from 'vitest'
import { postgresAdapter } from 'zaris/postgres'
import { testAdapter } from '../conformance'
import { startPostgres, type PostgresServer } from './server'

let server: PostgresServer
beforeAll(async () => {
  server = await startPostgres()
})
afterAll(async () => {
  await server?.dispose()
})

testAdapter('postgres', (namespace) => postgresAdapter({ url: server.url(namespace) }), { scale: 0.25 })
