/**
 * The conformance suite, unchanged and whole, against the Postgres adapter
 * on a real Postgres: directly, and through a real PgBouncer in transaction
 * mode (where LISTEN reaches nobody: the adapter finds that out and its
 * watches poll). In `npm run test:faults`: `npm test` runs the direct suite
 * at a quarter of its race rounds (test/postgres/conformance.test.ts) and
 * the PgBouncer checks of test/postgres/pgbouncer.test.ts.
 */
import { describe } from 'vitest'
import { postgresAdapter } from 'zaris/postgres'
import { testAdapter } from '../conformance'
import { postgresWithBouncer } from '../postgres/with-bouncer'

const { server, bouncer } = postgresWithBouncer()

describe('directly', () => {
  testAdapter('postgres', (namespace) => postgresAdapter({ url: server().url(namespace) }))
})

describe('through PgBouncer in transaction mode', () => {
  testAdapter('postgres through pgbouncer', (namespace) => postgresAdapter({ url: bouncer().url(namespace) }))
})
