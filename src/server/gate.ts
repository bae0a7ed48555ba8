/**
 * Who may use the node, checked before any route runs: the `Host` header
 * (against DNS rebinding, when hosts are configured), the bearer token (when
 * one is set), CORS preflights and the CORS headers of an answer to an
 * allowed browser origin.
 *
 * @module
 */
import { UnauthorizedError } from '../core/errors'
import { bearerChecker } from './auth'
import type { Settings } from './options'
import { json, type Exchange, type Reply } from './reply'

/** The node's access checks. */
export class Gate {
  readonly #origins: ReadonlySet<string>
  readonly #hosts: ReadonlySet<string> | undefined
  readonly #authorized: ((authorization: string | null) => Promise<boolean>) | undefined

  constructor(settings: Settings) {
    this.#origins = settings.origins
    this.#hosts = settings.hosts
    this.#authorized = settings.token === undefined ? undefined : bearerChecker(settings.token)
  }

  /** Refuses a Host not served here (against DNS rebinding), when hosts are configured. */
  hostRefusal(ex: Exchange): Reply | undefined {
    if (!this.#hosts) return undefined
    const host = (ex.header('host') ?? '').toLowerCase().replace(/:\d+$/, '')
    if (this.#hosts.has(host)) return undefined
    return json(403, { error: { code: 'UNAUTHORIZED', message: `host ${JSON.stringify(host)} is not served here` } })
  }

  /** Throws UNAUTHORIZED unless the request carries the token (when one is set). */
  async checkBearer(ex: Exchange): Promise<void> {
    if (this.#authorized && !(await this.#authorized(ex.header('authorization')))) {
      throw new UnauthorizedError('missing or wrong bearer token')
    }
  }

  /** The answer to a CORS preflight: allowed for a configured origin, 403 for any other. */
  preflight(ex: Exchange): Reply {
    const origin = ex.header('origin')
    if (origin === null || !this.#origins.has(origin)) return json(403, { error: { code: 'UNAUTHORIZED', message: 'origin not allowed' } })
    return {
      status: 204,
      headers: {
        'access-control-allow-methods': 'GET, POST',
        'access-control-allow-headers': 'authorization, content-type, last-event-id',
        'access-control-max-age': '600',
      },
      body: '',
    }
  }

  /** Lets an allowed origin read `reply`. */
  allowOrigin(ex: Exchange, reply: Reply): void {
    const origin = ex.header('origin')
    if (origin !== null && this.#origins.has(origin)) {
      reply.headers['access-control-allow-origin'] = origin
      reply.headers.vary = 'Origin'
    }
  }
}
