/**
 * The conformance suite, unchanged and whole, against the Postgres adapter
 * on a real Postgres: directly, and through a real PgBouncer in transaction
 * mode (where LISTEN reaches nobody: the adapter finds that out and its
 * watches poll), with the store's hooks (test/postgres/hooks.ts). In `npm run test:faults`: `npm test` runs the direct suite
 * at a quarter of its race rounds (test/postgres/conformance.test.ts) and
 * the PgBouncer checks of test/postgres/pgbouncer.test.ts.
 */
import { describe } from 'vitest'
import { postgresAdapter } from 'zaris/postgres'
import { testAdapter } from '../conformance'
import { postgresHooks } from '../postgres/hooks'

// The whole suite's races at full rounds: more history than npm test's 300 events.
const HISTORY = 1_000
import { postgresWithBouncer } from '../postgres/with-bouncer'

const { server, bouncer } = postgresWithBouncer()

describe('directly', () => {
  testAdapter('postgres', (namespace) => postgresAdapter({ url: server().url(namespace), historySize: HISTORY }), postgresHooks(server, HISTORY))
})

describe('through PgBouncer in transaction mode', () => {
  // The hooks act on the Postgres behind the pooler: a kill -9 there is what the pooler's clients see.
  testAdapter('postgres through pgbouncer', (namespace) => postgresAdapter({ url: bouncer().url(namespace), historySize: HISTORY }), postgresHooks(server, HISTORY))
})
