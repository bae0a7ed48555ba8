/** A Postgres and a real PgBouncer in front of it (transaction mode) for one test file (server.ts). */
import { afterAll, beforeAll } from 'vitest'
import { PgBouncer, startPostgres, type PostgresServer } from './server'

/** Starts both before the file's tests and stops them after; the getters answer them once started. */
export function postgresWithBouncer(options: { poolSize?: number } = {}): { server(): PostgresServer; bouncer(): PgBouncer } {
  let server: PostgresServer | undefined
  let bouncer: PgBouncer | undefined
  beforeAll(async () => {
    server = await startPostgres()
    bouncer = await new PgBouncer(server, options).start()
  })
  afterAll(async () => {
    await bouncer?.dispose()
    await server?.dispose()
  })
  return { server: () => server!, bouncer: () => bouncer! }
}
