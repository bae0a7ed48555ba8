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
 * @module
 */
import type { Adapter, Unsubscribe, WatchEvent } from '../core/adapter'
import { ClosedError, CompactedError, InvalidArgumentError, UnauthorizedError, UnsupportedError, RateLimitedError, TooLargeError, ZarisError, isZarisError } from '../core/errors'
import {
  API_PREFIX,
  NAMESPACE_PATTERN,
  FRAMES_PATH,
  FRAMES_PROTOCOL,
  FRAME_ENVELOPE_BYTES,
  SSE_ERROR,
  SSE_READY,
  answerFrame,
  commitRequest,
  parseRequestFrame,
  eventsQuery,
  getRequest,
  listRequest,
  parseWith,
  statusOf,
  toCommitResponse,
  toGetResponse,
  watchQuery,
} from '../adapters/http/protocol'
import { bearerChecker } from './auth'
import { Metrics } from './metrics'
import { ReplayCache, type ReplayCacheOptions } from './replay-cache'

/** Options of {@link createHandler}. */
export interface HandlerOptions {
  /** The adapter that serves a namespace; called once per namespace, and closed by `close()`. */
  adapterFor(namespace: string): Adapter | Promise<Adapter>
  /**
   * The store's current revision and epoch (an id of this life of the store),
   * read right after a watch is established: the revision lets a client resume
   * a watch that has seen no event yet, the epoch tells it when the store it
   * resumes against is not the one it watched (reset, or a different store).
   * Optional; without it those two cases cannot be told.
   */
  positionOf?(namespace: string): StorePosition | Promise<StorePosition>
  /** Require `Authorization: Bearer <token>` on everything but `/healthz` and preflights. */
  token?: string
  /** Origins allowed to call from a browser (exact matches; never `*`). Default: none. */
  cors?: string[]
  /** Accept only these `Host` names (without port), against DNS rebinding. Default: any. */
  hosts?: string[]
  /** Largest request body in bytes. Default 64 KiB. */
  maxBodyBytes?: number
  /** Most open watch streams; past it, 429. Default 1 000. */
  maxWatchers?: number
  /**
   * Most namespaces this node opens; a request for one more gets 429. Any
   * request opens its namespace, so without a cap an open node could be made
   * to hold an unbounded number of stores. Default 10 000.
   */
  maxNamespaces?: number
  /** Comment sent on quiet watch streams every this many ms. Default 15 000. */
  heartbeatMs?: number
  /** Bounds of the memory of request ids. */
  replay?: ReplayCacheOptions
  /** Where unexpected errors are reported (never with a token). Default: console.error. */
  log?: (line: string) => void
}

/** Where a store is: its revision, and the epoch that names this life of it. */
export interface StorePosition {
  /** The store's current revision. */
  revision: number
  /** An id of this life of the store: it changes when the store is reset or replaced. */
  epoch: string
}

/** One request as the handler sees it: enough of `Request` and of Node's IncomingMessage. */
export interface Exchange {
  /** The HTTP method. */
  method: string
  /** The request URL; only its path and query are used. */
  url: URL
  /** A request header (lowercase name), or null. */
  header(name: string): string | null
  /** The body as text; rejects with a TOO_LARGE error past `limit` bytes. */
  body(limit: number): Promise<string>
}

/** Where a streamed reply writes; `write` returns false once the peer is too far behind. */
export interface StreamSink {
  /** Sends a chunk; false once the peer is too far behind (the stream is then ended). */
  write(chunk: string): boolean
  /** Ends the response. */
  end(): void
}

/** A reply: a complete body, or a stream started once headers are out (returns its stop function). */
export type Reply =
  | { status: number; headers: Record<string, string>; body: string }
  | { status: number; headers: Record<string, string>; stream: (out: StreamSink) => () => void }

/** One answer of a framed connection. */
export interface FrameAnswer {
  /** The answer frame, newline included. */
  frame: string
  /** The request frame could not be read at all: send the answer, then close the connection. */
  fatal: boolean
}

/** A framed connection the node accepted; requests may overlap. */
export interface FrameSession {
  /** Answers one request frame (its text, without the newline). Never rejects. */
  answer(frame: string): Promise<FrameAnswer>
}

/** The outcome of an upgrade request: a session, or the HTTP reply that refuses it. */
export type UpgradeOutcome = { session: FrameSession } | { reply: Reply }

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
  /** The counters behind `/metrics`. */
  readonly metrics: Metrics
  /** Open watch streams. */
  readonly watchers: number
  /** Ends every watch stream and closes the adapters the handler opened. */
  close(): Promise<void>
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }
const ROUTE = new RegExp(`^${API_PREFIX}/([^/]*)/(get|list|commit|watch|events)$`)
/** The routes a frame may name: the POSTs. */
type CallOp = 'get' | 'list' | 'commit'
/** An `events` page stops at a revision boundary once it holds this many events or bytes. */
const PAGE_EVENTS = 1_000
const PAGE_BYTES = 1024 * 1024
const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]']

/** The host names a loopback-bound node accepts: see {@link HandlerOptions.hosts}. */
export const loopbackHosts: readonly string[] = LOOPBACK_HOSTS

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
  if (typeof options?.adapterFor !== 'function') throw new InvalidArgumentError('createHandler: adapterFor(namespace) is required')
  const maxBody = positive(options.maxBodyBytes, 64 * 1024, 'maxBodyBytes')
  const maxWatchers = positive(options.maxWatchers, 1_000, 'maxWatchers')
  const maxNamespaces = positive(options.maxNamespaces, 10_000, 'maxNamespaces')
  const heartbeatMs = positive(options.heartbeatMs, 15_000, 'heartbeatMs')
  for (const origin of options.cors ?? []) {
    if (!/^https?:\/\/[^/\s*]+$/i.test(origin)) {
      throw new InvalidArgumentError(`cors: ${JSON.stringify(origin)} is not an origin like http://localhost:5173 (no paths, no *)`)
    }
  }
  const origins = new Set(options.cors ?? [])
  const hosts = options.hosts && new Set(options.hosts.map((h) => h.toLowerCase()))
  const authorized = options.token === undefined ? undefined : bearerChecker(checkToken(options.token))
  const log = options.log ?? ((line: string) => console.error(line))
  const metrics = new Metrics()
  const replays = new ReplayCache(options.replay)
  const adapters = new Map<string, Promise<Adapter>>()
  const streams = new Set<() => void>()
  let watchers = 0
  let closed = false

  const adapterOf = (ns: string): Promise<Adapter> => {
    let a = adapters.get(ns)
    if (!a) {
      if (adapters.size >= maxNamespaces) {
        return Promise.reject(new RateLimitedError(`this node serves at most ${maxNamespaces} namespaces and has that many open; namespace ${JSON.stringify(ns)} was not opened (zaris serve --max-namespaces)`))
      }
      a = Promise.resolve().then(() => options.adapterFor(ns))
      a.catch(() => adapters.delete(ns))
      adapters.set(ns, a)
    }
    return a
  }

  const json = (status: number, value: unknown, headers: Record<string, string> = {}): Reply => ({
    status,
    headers: { ...JSON_HEADERS, ...headers },
    body: JSON.stringify(value),
  })

  const errorReply = (err: unknown): Reply => {
    if (isZarisError(err)) {
      const headers: Record<string, string> = {}
      if (err.code === 'UNAUTHORIZED') headers['www-authenticate'] = 'Bearer'
      return json(statusOf(err.code), { error: err.toJSON() }, headers)
    }
    log(`zaris node: internal error: ${err instanceof Error ? err.message : String(err)}`)
    return json(500, { error: { code: 'INTERNAL', message: 'internal error' } })
  }

  async function readJson(ex: Exchange): Promise<unknown> {
    const type = ex.header('content-type') ?? ''
    // Only application/json: a cross-origin page cannot send it without a CORS preflight.
    if (!/^application\/json\s*(;|$)/i.test(type)) throw new UnsupportedError('content-type must be application/json')
    const text = await ex.body(maxBody)
    try {
      return JSON.parse(text)
    } catch {
      throw new InvalidArgumentError('body: malformed JSON')
    }
  }

  async function route(ex: Exchange, name: (route: string) => void): Promise<Reply> {
    if (closed) throw new ClosedError('the node is shutting down')
    const path = ex.url.pathname
    const refused = hostRefusal(ex)
    if (refused) return refused
    if (ex.method === 'OPTIONS') {
      name('preflight')
      const origin = ex.header('origin')
      if (origin === null || !origins.has(origin)) return json(403, { error: { code: 'UNAUTHORIZED', message: 'origin not allowed' } })
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
    if (path === '/healthz') {
      name('healthz')
      return json(200, { ok: true })
    }
    await checkBearer(ex)
    if (path === '/metrics') {
      name('metrics')
      if (ex.method !== 'GET') return methodNotAllowed('GET')
      return {
        status: 200,
        headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' },
        body: metrics.render({ watchers, locksHeld: await locksHeld(), namespaces: adapters.size }),
      }
    }
    const m = ROUTE.exec(path)
    if (!m) {
      name('other')
      return json(404, { error: { code: 'INVALID_ARGUMENT', message: `no such endpoint: ${ex.method} ${path.slice(0, 200)}` } })
    }
    const op = m[2]!
    name(op)
    const ns = namespaceOf(m[1]!)
    if (op === 'watch') {
      if (ex.method !== 'GET') return methodNotAllowed('GET')
      return watch(ex, ns)
    }
    if (op === 'events') {
      if (ex.method !== 'GET') return methodNotAllowed('GET')
      return history(ex, ns)
    }
    if (ex.method !== 'POST') return methodNotAllowed('POST')
    return call(ns, op as CallOp, await readJson(ex))
  }

  /** Refuses a Host not served here (against DNS rebinding), when hosts are configured. */
  function hostRefusal(ex: Exchange): Reply | undefined {
    if (!hosts) return undefined
    const host = (ex.header('host') ?? '').toLowerCase().replace(/:\d+$/, '')
    if (hosts.has(host)) return undefined
    return json(403, { error: { code: 'UNAUTHORIZED', message: `host ${JSON.stringify(host)} is not served here` } })
  }

  async function checkBearer(ex: Exchange): Promise<void> {
    if (authorized && !(await authorized(ex.header('authorization')))) {
      throw new UnauthorizedError('missing or wrong bearer token')
    }
  }

  /** The namespace of a route's path segment, checked. */
  function namespaceOf(segment: string): string {
    const ns = decodeURIComponentSafe(segment)
    if (!NAMESPACE_PATTERN.test(ns)) {
      throw new InvalidArgumentError('namespace: may use only letters, digits and . _ ~ - (1-128 characters)')
    }
    return ns
  }

  /**
   * `get`, `list` and `commit` on a parsed JSON body: the one code path of
   * a POST and of a frame (validation, replay cache, commit metrics).
   */
  async function call(ns: string, op: CallOp, body: unknown): Promise<Reply> {
    const adapter = await adapterOf(ns)
    switch (op) {
      case 'get': {
        const { key } = parseWith(getRequest, body, 'body')
        return json(200, toGetResponse(await adapter.get(key)))
      }
      case 'list': {
        const { prefix } = parseWith(listRequest, body, 'body')
        return json(200, { entries: await adapter.list(prefix) })
      }
      default: {
        const { checks, ops, requestId, seen } = parseWith(commitRequest, body, 'body')
        const apply = async () => {
          // `seen` moves a store that lost its state above what the client saw (bounded: see CommitOptions.seen).
          const r = await adapter.commit(checks, ops, requestId === undefined && seen === undefined ? undefined : { requestId, seen })
          if (r.ok) metrics.commits++
          else metrics.conflicts++
          return JSON.stringify(toCommitResponse(r))
        }
        if (requestId === undefined) return { status: 200, headers: { ...JSON_HEADERS }, body: await apply() }
        const { body: answer, replayed } = await replays.run(`${ns}\u0000${requestId}`, apply)
        if (replayed) metrics.replays++
        return { status: 200, headers: replayed ? { ...JSON_HEADERS, 'x-zaris-replayed': '1' } : { ...JSON_HEADERS }, body: answer }
      }
    }
  }

  function queryOf(ex: Exchange): Record<string, string> {
    const query: Record<string, string> = {}
    for (const [k, v] of ex.url.searchParams) {
      if (k in query) throw new InvalidArgumentError(`${k}: given twice`)
      query[k] = v
    }
    return query
  }

  /**
   * One page of the history after `after`: what a watch from `after` would
   * replay. The whole namespace is followed (and filtered here) so that
   * `through` can say up to where the page is complete even when the prefix
   * saw no change: the store's revision, or where a full page was cut.
   */
  async function history(ex: Exchange, ns: string): Promise<Reply> {
    const { prefix, after, epoch } = parseWith(eventsQuery, { prefix: '', ...queryOf(ex) }, 'query')
    const adapter = await adapterOf(ns)
    const parts: string[] = []
    let bytes = 0
    let through = after
    let more = false
    let early: Error | undefined
    const sink = {
      event: (ev: WatchEvent) => {
        if (more) return
        // Cut only between revisions, so `through` is complete.
        if (ev.revision !== through && (parts.length >= PAGE_EVENTS || bytes >= PAGE_BYTES)) {
          more = true
          return
        }
        through = ev.revision
        if (!ev.key.startsWith(prefix)) return
        const part = JSON.stringify(ev)
        parts.push(part)
        bytes += part.length
      },
      error: (err: Error) => {
        early ??= err
      },
    }
    const unsubscribe = await adapter.watch('', sink, after)
    try {
      const position = early ? undefined : await options.positionOf?.(ns)
      if (!early && position && epoch !== undefined && epoch !== position.epoch) {
        early = new CompactedError(`events after revision ${after}: the store here is not the one that history came from (it was reset or replaced); read the current state again`)
      }
      if (!early && position && after > position.revision) {
        early = new CompactedError(`events after revision ${after}: this store is at revision ${position.revision}; it was reset, so read the current state again`)
      }
      if (early) throw early
      if (!more && position) through = Math.max(through, position.revision)
    } finally {
      unsubscribe()
    }
    return { status: 200, headers: { ...JSON_HEADERS }, body: `{"events":[${parts.join(',')}],"through":${through},"more":${more}}` }
  }

  async function watch(ex: Exchange, ns: string): Promise<Reply> {
    const query = queryOf(ex)
    const lastEventId = ex.header('last-event-id')
    if (lastEventId !== null) query.from = lastEventId.trim()
    const { prefix, from, epoch } = parseWith(watchQuery, { prefix: '', ...query }, 'query')
    if (watchers >= maxWatchers) throw new RateLimitedError(`too many watchers (${maxWatchers}); close some and retry`)
    watchers++
    let released = false
    const release = () => {
      if (!released) {
        released = true
        watchers--
      }
    }
    try {
      const adapter = await adapterOf(ns)
      // Until the stream is attached, events wait here; an error before then becomes the HTTP answer.
      let pending: string[] | undefined = []
      let early: Error | undefined
      let out: StreamSink | undefined
      let stop: (() => void) | undefined
      const emit = (chunk: string) => {
        if (pending) pending.push(chunk)
        else if (out && !out.write(chunk)) stop?.() // the peer fell too far behind: it will resume
      }
      const sink = {
        event: (ev: WatchEvent) => emit(`id: ${ev.revision}\ndata: ${JSON.stringify(ev)}\n\n`),
        error: (err: Error) => {
          if (pending && !out) {
            early ??= err
            return
          }
          emit(`event: ${SSE_ERROR}\ndata: ${JSON.stringify(toWire(err))}\n\n`)
          stop?.()
        },
      }
      const unsubscribe: Unsubscribe = await adapter.watch(prefix, sink, from)
      const position = early ? undefined : await options.positionOf?.(ns)
      const revision = position?.revision
      if (!early && position && epoch !== undefined && epoch !== position.epoch) {
        early = new CompactedError(`watch from revision ${from ?? 0}: the store here is not the one that history came from (it was reset or replaced); read the current state again`)
      }
      if (!early && from !== undefined && revision !== undefined && from > revision) {
        // The client saw revisions this store never reached: the store was reset (a memory node restarted).
        early = new CompactedError(`watch from revision ${from}: this store is at revision ${revision}; it was reset, so read the current state again`)
      }
      if (early) {
        unsubscribe()
        throw early
      }
      if (closed) {
        unsubscribe()
        throw new ClosedError('the node is shutting down')
      }
      const ready = position === undefined ? { heartbeat: heartbeatMs } : { revision: position.revision, epoch: position.epoch, heartbeat: heartbeatMs }
      return {
        status: 200,
        headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' },
        stream(sinkOut) {
          out = sinkOut
          let timer: ReturnType<typeof setInterval> | undefined
          const end = () => {
            if (!stop) return
            stop = undefined
            streams.delete(end)
            if (timer !== undefined) clearInterval(timer)
            unsubscribe()
            release()
            sinkOut.end()
          }
          stop = end
          streams.add(end)
          const queued = pending ?? []
          pending = undefined
          sinkOut.write(`retry: 1000\n\n`)
          for (const chunk of queued) sinkOut.write(chunk)
          sinkOut.write(`event: ${SSE_READY}\ndata: ${JSON.stringify(ready)}\n\n`)
          timer = setInterval(() => {
            if (!sinkOut.write(`: ping\n\n`)) end()
          }, heartbeatMs)
          ;(timer as { unref?: () => void }).unref?.()
          return end
        },
      }
    } catch (err) {
      release()
      throw err
    }
  }

  /** One request frame, answered: the frame's route runs through {@link call} like a POST. */
  async function answerFrameText(text: string): Promise<FrameAnswer> {
    const started = performance.now()
    let id: number
    let path: string | undefined
    let body: unknown
    try {
      ;({ id, path, body } = parseRequestFrame(text))
    } catch (err) {
      const reply = errorReply(err)
      metrics.observe('frames', reply.status, (performance.now() - started) / 1000)
      return { frame: answerFrame(null, reply.status, 'body' in reply ? reply.body : '{}'), fatal: true }
    }
    let routeName = 'other'
    let reply: Reply
    try {
      if (closed) throw new ClosedError('the node is shutting down')
      if (path === undefined) throw new InvalidArgumentError('frame.path: must be a path like /v1/<ns>/get (at most 512 characters)')
      const m = ROUTE.exec(path)
      if (!m) {
        reply = json(404, { error: { code: 'INVALID_ARGUMENT', message: `no such endpoint: ${path.slice(0, 200)}` } })
      } else {
        const op = m[2]!
        routeName = op
        const ns = namespaceOf(m[1]!)
        if (op === 'watch' || op === 'events') {
          reply = json(400, { error: { code: 'INVALID_ARGUMENT', message: `${op} is not served over frames; use GET ${path.slice(0, 200)}` } })
        } else {
          reply = await call(ns, op as CallOp, body)
        }
      }
    } catch (err) {
      reply = errorReply(err)
    }
    metrics.observe(routeName, reply.status, (performance.now() - started) / 1000)
    return { frame: answerFrame(id, reply.status, 'body' in reply ? reply.body : '{}'), fatal: false }
  }

  const session: FrameSession = { answer: answerFrameText }

  async function upgrade(ex: Exchange): Promise<UpgradeOutcome> {
    const started = performance.now()
    let outcome: UpgradeOutcome
    try {
      if (closed) throw new ClosedError('the node is shutting down')
      const refused = hostRefusal(ex)
      if (refused) outcome = { reply: refused }
      else {
        await checkBearer(ex)
        const path = ex.url.pathname
        if (path !== FRAMES_PATH) {
          outcome = { reply: json(404, { error: { code: 'INVALID_ARGUMENT', message: `no such endpoint: upgrade at ${path.slice(0, 200)}; use ${FRAMES_PATH}` } }) }
        } else if (ex.method !== 'GET') {
          outcome = { reply: methodNotAllowed('GET') }
        } else if ((ex.header('upgrade') ?? '').trim().toLowerCase() !== FRAMES_PROTOCOL) {
          outcome = { reply: json(400, { error: { code: 'INVALID_ARGUMENT', message: `upgrade: only ${FRAMES_PROTOCOL} is served here` } }) }
        } else {
          outcome = { session }
        }
      }
    } catch (err) {
      outcome = { reply: errorReply(err) }
    }
    if ('reply' in outcome) outcome.reply.headers['x-content-type-options'] = 'nosniff'
    metrics.observe('frames', 'session' in outcome ? 101 : outcome.reply.status, (performance.now() - started) / 1000)
    return outcome
  }

  async function locksHeld(): Promise<number> {
    let n = 0
    for (const a of adapters.values()) {
      try {
        for (const e of await (await a).list('')) if (e.owner !== undefined) n++
      } catch {
        // A namespace that cannot answer is not counted.
      }
    }
    return n
  }

  async function handle(ex: Exchange): Promise<Reply> {
    const started = performance.now()
    let routeName = 'other'
    let reply: Reply
    try {
      reply = await route(ex, (r) => (routeName = r))
    } catch (err) {
      reply = errorReply(err)
    }
    const origin = ex.header('origin')
    if (origin !== null && origins.has(origin)) {
      reply.headers['access-control-allow-origin'] = origin
      reply.headers.vary = 'Origin'
    }
    reply.headers['x-content-type-options'] = 'nosniff'
    metrics.observe(routeName, reply.status, (performance.now() - started) / 1000)
    return reply
  }

  return {
    handle,
    upgrade,
    maxFrameBytes: maxBody + FRAME_ENVELOPE_BYTES,
    metrics,
    get watchers() {
      return watchers
    },
    async fetch(request) {
      const ex: Exchange = {
        method: request.method,
        url: new URL(request.url),
        header: (n) => request.headers.get(n),
        body: (limit) => readLimited(request, limit),
      }
      const reply = await handle(ex)
      if ('body' in reply) return new Response(reply.status === 204 ? null : reply.body, { status: reply.status, headers: reply.headers })
      const encoder = new TextEncoder()
      let stop: (() => void) | undefined
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          stop = reply.stream({
            write(chunk) {
              try {
                controller.enqueue(encoder.encode(chunk))
              } catch {
                return false
              }
              return (controller.desiredSize ?? 0) > -1024 * 1024
            },
            end() {
              try {
                controller.close()
              } catch {
                // already closed or cancelled
              }
            },
          })
        },
        cancel() {
          stop?.()
        },
      })
      request.signal?.addEventListener('abort', () => stop?.(), { once: true })
      return new Response(body, { status: reply.status, headers: reply.headers })
    },
    async close() {
      if (closed) return
      closed = true
      for (const end of [...streams]) end()
      const opened = [...adapters.values()]
      adapters.clear()
      await Promise.allSettled(opened.map(async (a) => (await a).close()))
    },
  }

  function methodNotAllowed(allow: string): Reply {
    return json(405, { error: { code: 'INVALID_ARGUMENT', message: `method not allowed; use ${allow}` } }, { allow })
  }
}

/** A TOO_LARGE error for a body past `limit` bytes. */
export function tooLarge(limit: number): ZarisError {
  return new TooLargeError(`body: larger than ${limit} bytes`)
}

async function readLimited(request: Request, limit: number): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? NaN)
  if (declared > limit) throw tooLarge(limit)
  if (!request.body) return ''
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel().catch(() => {})
      throw tooLarge(limit)
    }
    chunks.push(value)
  }
  const all = new Uint8Array(size)
  let at = 0
  for (const c of chunks) {
    all.set(c, at)
    at += c.byteLength
  }
  try {
    // Strict, as the Node listener: replacing bad bytes with U+FFFD would write a key the client never sent.
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(all)
  } catch {
    throw new InvalidArgumentError('body: not valid UTF-8')
  }
}

function toWire(err: Error): { code: string; message: string } {
  return isZarisError(err) ? err.toJSON() : { code: 'INTERNAL', message: 'internal error' }
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

function positive(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidArgumentError(`${name} must be a positive number, got ${String(value)}`)
  }
  return value
}

function checkToken(token: unknown): string {
  if (typeof token !== 'string' || token.length < 8 || /\s/.test(token)) {
    throw new InvalidArgumentError('token must be a string of at least 8 characters without whitespace')
  }
  return token
}
