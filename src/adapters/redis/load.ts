/**
 * Loads ioredis on first use (`../shared/load`), and turns its failures into
 * zaris errors.
 *
 * @module
 */
import type { Redis, RedisOptions } from 'ioredis'
import { UnauthorizedError, UnavailableError, UnsupportedError, ZarisError } from '../../core/contract/errors'
import { loadOptional } from '../kit/load'

/** The ioredis `Redis` class. */
export type RedisConstructor = new (options: RedisOptions) => Redis

/**
 * Imports the ioredis package (or `name`, for tests) and returns its `Redis`
 * class, or throws an `UnsupportedError` saying how to install it.
 */
export async function loadIoredis(name = 'ioredis'): Promise<RedisConstructor> {
  const { mod, inner } = await loadOptional(name, 'ioredis', 'the Redis adapter')
  const Redis = mod.Redis ?? inner?.Redis ?? inner?.default ?? inner
  if (typeof Redis !== 'function') throw new UnsupportedError(`the module ${JSON.stringify(name)} does not export the ioredis Redis class`)
  return Redis as RedisConstructor
}

/** Redis replies that mean "not now" (a replica, a loading or busy server), not "never". */
export const TRANSIENT = /^(READONLY|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|BUSY|MOVED|ASK|NOREPLICAS|OOM)\b/

/**
 * A zaris error for a failed Redis call: `UnavailableError` when Redis could
 * not be reached or cannot answer now (the call may or may not have been
 * applied), `ZarisError('INTERNAL')` for anything else Redis refused.
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
  return new UnavailableError(`redis ${what} failed (it may or may not have been applied): ${message}`, { cause: err })
}
