/**
 * The conformance suite, unchanged, against the Postgres adapter on a real
 * Postgres (started on a free loopback port for this file), with the store's
 * hooks (hooks.ts: a real kill -9 and restart, the revision sequence moved,
 * 300 events of history, a closed port). `npm test` runs its heavy races
 * at a tenth of their rounds (the suite's `scale`: the same checks, fewer
 * rounds, kept to seconds);
 * `npm run test:faults` runs it whole, directly and through PgBouncer in
 * transaction mode (test/long/postgres-conformance.test.ts).
 */
import { afterAll, beforeAll } from 'vitest'
import { postgresAdapter } from 'zaris/postgres'
import { testAdapter } from '../conformance'
import { HISTORY_KEPT, postgresHooks } from './hooks'
import { startPostgres, type PostgresServer } from './server'

let server: PostgresServer
beforeAll(async () => {
  server = await startPostgres()
})
afterAll(async () => {
  await server?.dispose()
})

testAdapter('postgres', (namespace) => postgresAdapter({ url: server.url(namespace), historySize: HISTORY_KEPT }), { scale: 0.1, ...postgresHooks(() => server) })
