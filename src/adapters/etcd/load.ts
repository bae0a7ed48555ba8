/**
 * Loads the etcd client, `etcd3`, on first use (`../shared/load`), and turns
 * its failures into zaris errors.
 *
 * @module
 */
import type * as Etcd3Module from 'etcd3'
import { InternalError, TooLargeError, UnauthorizedError, UnavailableError, UnsupportedError, ZarisError } from '../../core/contract/errors'
import { loadOptional } from '../kit/load'

export type Etcd3 = typeof Etcd3Module

/** Imports `etcd3` (or `name`, for tests), or throws an `UnsupportedError` saying how to install it. */
export async function loadEtcd3(name = 'etcd3'): Promise<Etcd3> {
  const { mod, inner } = await loadOptional(name, 'etcd3', 'the etcd adapter')
  const lib = (typeof mod.Etcd3 === 'function' ? mod : inner) as Etcd3 | undefined
  if (typeof lib?.Etcd3 !== 'function') throw new UnsupportedError(`the module ${JSON.stringify(name)} does not export the etcd3 Etcd3 class`)
  return lib
}

/**
 * Failures that mean "not now, maybe elsewhere": the member is down, paused,
 * cut off from its leader, or the cluster is electing one. The call may or
 * may not have been applied; a retry (with the same request id) is safe.
 */
const TRANSIENT = /unavailable|deadline|timed? ?out|leader changed|no leader|not capable|ECONNREFUSED|ECONNRESET|connection|too many requests|circuit|broken|stopped|aborted/i

/** Whether `err` is worth another try on another member. */
export function isTransient(err: unknown): boolean {
  if (err instanceof ZarisError) return err.code === 'UNAVAILABLE'
  const e = err as { message?: unknown; name?: unknown }
  return TRANSIENT.test(`${String(e?.name ?? '')} ${String(e?.message ?? err)}`)
}

/**
 * A zaris error for a failed etcd call: `UnavailableError` when etcd could not
 * be reached or cannot answer now (the call may or may not have been applied),
 * `UnauthorizedError` for refused credentials, `TooLargeError` for a request
 * over etcd's size limits, `InternalError` for anything else etcd refused.
 */
export function etcdError(err: unknown, what: string): ZarisError {
  if (err instanceof ZarisError) return err
  const message = err instanceof Error ? err.message : String(err)
  if (/authentication failed|permission denied|invalid auth token|user name is empty|unauthenticated/i.test(message)) {
    return new UnauthorizedError(`etcd refused ${what}: ${message}`)
  }
  if (/request is too large|too many operations in txn|exceeded.*max.*size|larger than max/i.test(message)) {
    return new TooLargeError(`etcd refused ${what} as too large (its --max-request-bytes or --max-txn-ops): ${message}`)
  }
  if (isTransient(err)) return new UnavailableError(`etcd ${what} failed (it may or may not have been applied): ${message}`, { cause: err })
  return new InternalError(`etcd refused ${what}: ${message}`, { cause: err })
}
