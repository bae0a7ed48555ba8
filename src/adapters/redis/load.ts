/**
 * Loads the client library of a connection zaris opens, on first use
 * (`../kit/load`), and turns Redis failures into zaris errors.
 *
 * A `redis://` URL names its library with `?client=ioredis|redis|iovalkey`;
 * without it, the first of {@link LIBRARIES} that is installed opens it
 * (ioredis first: an app that has it keeps what it had before zaris knew the
 * others, and installing node-redis beside it changes nothing).
 *
 * @module
 */
import { UnauthorizedError, UnavailableError, UnsupportedError, ZarisError } from '../../core/contract/errors'
import { loadOptional } from '../kit/load'
import { LIBRARIES, type LoadedModule, type RedisLibrary } from './client'

const ADAPTER = 'the Redis adapter'

/** The library a connection uses, with its module. */
export interface LoadedLibrary {
  library: RedisLibrary
  module: LoadedModule
}

let picked: Promise<LoadedLibrary> | undefined

/**
 * Loads `library`, or (none named) the first of {@link LIBRARIES} that is
 * installed; throws an `UnsupportedError` saying what to install.
 * `candidates` replaces the module names tried, for tests.
 *
 * @example
 * const { library } = await loadLibrary(undefined) // 'ioredis' where ioredis is installed
 */
export function loadLibrary(library: RedisLibrary | undefined, candidates?: ReadonlyArray<readonly [RedisLibrary, string]>): Promise<LoadedLibrary> {
  if (library !== undefined) {
    const name = candidates?.find(([l]) => l === library)?.[1] ?? library
    return loadOptional(name, library, ADAPTER).then((module) => ({ library, module }))
  }
  if (candidates) return pick(candidates)
  // Once per process: every URL without `client=` uses the same library.
  picked ??= pick(LIBRARIES.map((l) => [l, l] as const))
  picked.catch(() => (picked = undefined))
  return picked
}

async function pick(candidates: ReadonlyArray<readonly [RedisLibrary, string]>): Promise<LoadedLibrary> {
  for (const [library, name] of candidates) {
    try {
      return { library, module: await loadOptional(name, library, ADAPTER) }
    } catch (err) {
      // Not installed: try the next. Installed but failing to load: say so, rather than quietly use another.
      if (!(err instanceof UnsupportedError && /is not installed/.test(err.message))) throw err
    }
  }
  throw new UnsupportedError(
    `${ADAPTER} needs a Redis client library, and none is installed: run \`npm install ioredis\` (or \`npm install redis\` for node-redis, or \`npm install iovalkey\`); they are optional peer dependencies of zaris`,
  )
}

/** Redis replies that mean "not now" (a replica, a loading or busy server), not "never". */
export const TRANSIENT = /^(READONLY|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|BUSY|MOVED|ASK|NOREPLICAS|OOM)\b/

/**
 * A zaris error for a failed Redis call: `UnavailableError` when Redis could
 * not be reached or cannot answer now (the call may or may not have been
 * applied), `ZarisError('INTERNAL')` for anything else Redis refused. Error
 * replies come named `ReplyError` from every library (`client.ts`).
 */
export function redisError(err: unknown, what: string): ZarisError {
  if (err instanceof ZarisError) return err
  const message = err instanceof Error ? err.message : String(err)
  const name = err instanceof Error ? err.name : ''
  if (name === 'ReplyError' && /^(NOAUTH|WRONGPASS|NOPERM)\b/.test(message)) {
    return new UnauthorizedError(`redis refused ${what}: ${message}`)
  }
  if (name === 'ReplyError' && !TRANSIENT.test(message)) {
    return new ZarisError('INTERNAL', `redis refused ${what}: ${message}`, { cause: err })
  }
  return new UnavailableError(`redis ${what} failed (it may or may not have been applied): ${message || describeError(err)}`, { cause: err })
}

/** Words for an error whose message is empty (Node's AggregateError of a refused connection has none). */
export function describeError(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) return err.errors.map(describeError).join('; ')
  if (err instanceof Error) return err.message || (err as { code?: string }).code || err.name
  return String(err)
}
