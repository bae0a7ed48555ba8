/**
 * `postgres://[user[:pass]@]host[:port]/db?ns=NAME[&schema=NAME][&…]` (and
 * `postgresql://`): the connection string node-postgres gets (without
 * zaris's own parameters), the namespace and the schema.
 *
 * @module
 */
import { InvalidUrlError } from '../../core/contract/errors'
import { redactUrl } from '../../core/contract/url'

/** What a Postgres URL names. */
export interface PostgresUrl {
  /** The URL node-postgres connects with: the given one without `ns` and `schema`. */
  connectionString: string
  namespace: string | undefined
  schema: string | undefined
}

/** A URL without its password, for messages and `zaris serve`. */
export const redactPostgresUrl = redactUrl

/**
 * Parses a Postgres URL; throws `InvalidUrlError` naming what is wrong.
 *
 * @example
 * parsePostgresUrl('postgres://app@db:5432/app?ns=jobs') // { connectionString: 'postgres://app@db:5432/app', namespace: 'jobs', schema: undefined }
 */
export function parsePostgresUrl(url: string): PostgresUrl {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw new InvalidUrlError(`${JSON.stringify(redactPostgresUrl(url))} is not a valid Postgres URL (postgres://user:pass@host:5432/db?ns=NAME)`)
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    throw new InvalidUrlError(`${JSON.stringify(redactPostgresUrl(url))}: a Postgres URL starts with postgres:// or postgresql://`)
  }
  if (u.hostname === '' && !u.searchParams.has('host')) {
    throw new InvalidUrlError(`${JSON.stringify(redactPostgresUrl(url))}: name the server, as in postgres://user@host:5432/db?ns=NAME`)
  }
  const namespace = u.searchParams.get('ns') ?? undefined
  const schema = u.searchParams.get('schema') ?? undefined
  u.searchParams.delete('ns')
  u.searchParams.delete('schema')
  return { connectionString: u.toString(), namespace, schema }
}
