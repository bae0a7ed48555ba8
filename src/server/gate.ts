/**
 * Who may use the node, checked before any route runs: requests a browser
 * marks as coming from another site (any web page the user visits could
 * otherwise use a node on the user's machine), the `Host` header (against
 * DNS rebinding, when hosts are configured), the bearer token (when one is
 * set), CORS preflights and the CORS headers of an answer to an allowed
 * browser origin.
 *
 * The cross-site rule, with or without a token, on every route: a request is
 * refused (403) when its `Origin` is not one given with `--cors`, or when
 * `Sec-Fetch-Site` says `cross-site` or `same-site` and no allowed `Origin`
 * came with it. A request the browser marks `same-origin` (a page the node's
 * own server serves, where the handler is embedded) or `none` (typed in the
 * address bar) is served, and so is one with neither header: Node clients,
 * curl, tools.
 *
 * @module
 */
import { UnauthorizedError } from '../core/contract/errors'
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

  /** Refuses a request a browser sent from another site (see the module comment). */
  crossSiteRefusal(ex: Exchange): Reply | undefined {
    const origin = ex.header('origin')
    const site = ex.header('sec-fetch-site')
    if (site === 'same-origin' || (origin !== null && this.#origins.has(origin))) return undefined
    if (origin === null && site !== 'cross-site' && site !== 'same-site') return undefined
    const from = origin === null ? `a page of another site (Sec-Fetch-Site: ${site})` : `origin ${JSON.stringify(origin.slice(0, 200))}`
    return json(403, { error: { code: 'UNAUTHORIZED', message: `cross-site request refused: ${from} is not allowed to use this node (zaris serve --cors ORIGIN allows one)` } })
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
