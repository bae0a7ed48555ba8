/**
 * The conformance suite, unchanged, against the Postgres adapter on a real
 * Postgres (started on a free loopback port for this file).
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

testAdapter('postgres', (namespace) => postgresAdapter({ url: server.url(namespace) }))
