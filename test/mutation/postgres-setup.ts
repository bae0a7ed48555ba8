/**
 * One Postgres for a whole mutation run (postgres.vitest.config.ts): its
 * port goes to the test files through `ZARIS_POSTGRES_SHARED`, and each of
 * them makes a database of its own on it.
 */
import { PostgresServer } from '../postgres/server'

export default async function setup(): Promise<() => Promise<void>> {
  if (process.env.ZARIS_POSTGRES_SHARED) return async () => {}
  const server = await new PostgresServer().start()
  process.env.ZARIS_POSTGRES_SHARED = String(server.port)
  return async () => {
    delete process.env.ZARIS_POSTGRES_SHARED
    await server.dispose()
  }
}
