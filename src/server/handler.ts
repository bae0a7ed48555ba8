/**
 * The zaris node as a web-standard fetch handler (`Request` -> `Response`)
 * around any adapter, so it can be embedded in any server; `listen()` in
 * `./node` serves it from Node's http module without the Request/Response
 * round trip. Namespaces come from the URL path: `/v1/<ns>/<op>`.
 *
 * What it guarantees to callers on the wire:
 * - Every body is validated with the protocol's zod schemas; a bad one gets
 *   400 and a JSON error naming the field. Nothing in a body is merged into
 *   an object, so keys like `__proto__` stay ordinary data.
 * - A commit with a `requestId` acts once: a retry gets the original answer.
 * - A watch is an SSE stream whose event ids are revisions; `Last-Event-ID`
 *   resumes it, and a resume older than the store's history gets 410 COMPACTED.
 * - `events` answers the same history as one JSON page, for a client that
 *   already streams the namespace and needs the past of one prefix.
 * - Errors are `{ error: { code, message } }`; never a stack trace.
 * - `get`, `list` and `commit` are also served as frames of a persistent
 *   connection (`upgrade`, see the protocol module): each frame goes through
 *   the very code a POST does, after the same token and Host checks, made
 *   once for the connection.
 *
 * This module routes; each route's work is in a module of its own:
 *
 * ```
 * options.ts        HandlerOptions, checked and defaulted (Settings)
 * gate.ts           Host, bearer token, CORS
 * namespaces.ts     the adapters opened, one per namespace, capped
 * calls.ts          get, list, commit (+ the replay cache), filter: POSTs and frames
 * parking.ts        commits that wait for a change (waitChange), bounded
 * watch-route.ts    GET watch: the SSE stream
 * history-route.ts  GET events: history pages
 * frame-session.ts  the upgrade to frames, and each frame's answer
 * web-fetch.ts      Request/Response around handle()
 * reply.ts          Exchange, Reply and the JSON/error answers
 * ```
 *
 * @module
 */
import { ClosedError } from '../core/contract/errors'
import { FRAME_ENVELOPE_BYTES } from './protocol'
import { Calls, readJson, type CallOp } from './calls'
import { FrameRoutes, type UpgradeOutcome } from './frame-session'
import { Gate } from './gate'
import { history } from './history-route'
import { Metrics } from './metrics'
import { Namespaces, namespaceOf } from './namespaces'
import { resolveOptions, type HandlerOptions } from './options'
import { errorReply, json, methodNotAllowed, notFound, type Exchange, type Reply } from './reply'
import { ROUTE } from './routes'
import { Watches } from './watch-route'
import { serveRequest } from './web-fetch'

/**
 * A node's request handler.
 *
 * @example
 * const handler = createHandler({ adapterFor: (ns) => memoryAdapter({ namespace: ns }) })
 * Deno.serve({ fetch: handler.fetch })
 */
export interface Handler {
  /** Serves a web-standard request. */
  fetch(request: Request): Promise<Response>
  /** Serves a request in the handler's own terms (what `listen()` uses). */
  handle(exchange: Exchange): Promise<Reply>
  /**
   * Decides on a request for a framed connection (`GET /v1/frames`,
   * `Upgrade: zaris-frames/1`), checking it like any request; the server
   * then switches protocols and hands each frame to the session.
   */
  upgrade(exchange: Exchange): Promise<UpgradeOutcome>
  /** The longest request frame accepted, in bytes: the body limit and the envelope. */
  readonly maxFrameBytes: number
  /** The most bytes of one `list` answer. */
  readonly maxPageBytes: number
  /** The counters behind `/metrics`. */
  readonly metrics: Metrics
  /** Open watch streams. */
  readonly watchers: number
  /** Ends every watch stream and closes the adapters the handler opened. */
  close(): Promise<void>
}

/**
 * Creates the node's handler around the adapters `adapterFor` gives.
 *
 * @example
 * import { createHandler } from 'zaris/server'
 * import { memoryAdapter } from 'zaris/memory'
 * const handler = createHandler({ adapterFor: (namespace) => memoryAdapter({ namespace }) })
 * const res = await handler.fetch(new Request('http://node/healthz'))
 */
export function createHandler(options: HandlerOptions): Handler {
  const settings = resolveOptions(options)
  const metrics = new Metrics()
  const gate = new Gate(settings)
  const namespaces = new Namespaces(settings.adapterFor, settings.maxNamespaces)
  const watches = new Watches(namespaces, settings)
  const calls = new Calls(namespaces, metrics, settings, (ns, body) => watches.filter(ns, body), (ns, id) => watches.answerStream(ns, id))
  let closed = false
  const frames = new FrameRoutes({ gate, calls, metrics, log: settings.log, closed: () => closed })
  const parked = calls.parking.counts
  metrics.gauge('commits_parked', 'Commits waiting for a change now (waitChange).', () => parked.now)
  metrics.gauge('commits_parked_total', 'Commits whose first try failed and that waited for a change.', () => parked.parked, 'counter')
  metrics.gauge('commits_park_retries_total', 'Parked commits tried again after a change.', () => parked.retried, 'counter')
  metrics.gauge('commits_park_refused_total', 'Waiting commits answered at once because a parking bound was reached.', () => parked.refused, 'counter')

  async function route(ex: Exchange, name: (route: string) => void): Promise<Reply> {
    if (closed) throw new ClosedError('the node is shutting down')
    const path = ex.url.pathname
    const refused = gate.crossSiteRefusal(ex) ?? gate.hostRefusal(ex)
    if (refused) return refused
    if (ex.method === 'OPTIONS') {
      name('preflight')
      return gate.preflight(ex)
    }
    if (path === '/healthz') {
      name('healthz')
      return json(200, { ok: true })
    }
    await gate.checkBearer(ex)
    if (path === '/metrics') {
      name('metrics')
      if (ex.method !== 'GET') return methodNotAllowed('GET')
      return {
        status: 200,
        headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' },
        body: metrics.render({ watchers: watches.watchers, locksHeld: await namespaces.locksHeld(), namespaces: namespaces.size }),
      }
    }
    const m = ROUTE.exec(path)
    if (!m) {
      name('other')
      return notFound(`${ex.method} ${path.slice(0, 200)}`)
    }
    const op = m[2]!
    name(op)
    const ns = namespaceOf(m[1]!)
    if (op === 'watch' || op === 'events') {
      if (ex.method !== 'GET') return methodNotAllowed('GET')
      return op === 'watch' ? watches.watch(ex, ns) : history(ex, ns, namespaces, settings)
    }
    if (ex.method !== 'POST') return methodNotAllowed('POST')
    return calls.call(ns, op as CallOp, await readJson(ex, settings.maxBodyBytes), () => ex.connection)
  }

  async function handle(ex: Exchange): Promise<Reply> {
    const started = performance.now()
    let routeName = 'other'
    let reply: Reply
    try {
      reply = await route(ex, (r) => (routeName = r))
    } catch (err) {
      reply = errorReply(err, settings.log)
    }
    gate.allowOrigin(ex, reply)
    reply.headers['x-content-type-options'] = 'nosniff'
    metrics.observe(routeName, reply.status, (performance.now() - started) / 1000)
    return reply
  }

  return {
    handle,
    upgrade: (ex) => frames.upgrade(ex),
    maxFrameBytes: settings.maxBodyBytes + FRAME_ENVELOPE_BYTES,
    maxPageBytes: settings.maxPageBytes,
    metrics,
    get watchers() {
      return watches.watchers
    },
    fetch: (request) => serveRequest(handle, request),
    async close() {
      if (closed) return
      closed = true
      calls.parking.close()
      watches.closeAll()
      await namespaces.closeAll()
    },
  }
}
