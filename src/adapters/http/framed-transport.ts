/**
 * The framed half of the Node transport: `get`, `list` and `commit` POSTs go
 * over one persistent connection per node (the protocol module describes
 * it), pipelined and matched by id, instead of one HTTP exchange each, which
 * in Node costs several times a round trip on loopback.
 *
 * - The connection is opened with an HTTP upgrade carrying the request's
 *   `Authorization`; a node that answers anything but 101 (an older node, a
 *   proxy in between), or nothing within 2 s, is served over plain HTTP, and
 *   asked again 30 s later.
 * - A request whose attempt times out while nothing came back on its
 *   connection since it was sent takes the connection down with it: the
 *   connection may be dead (a cut route), and the retry opens a fresh one.
 *   A connection that closes fails every request on it; the adapter retries
 *   them, commits under their request ids.
 * - The socket keeps a Node process alive only while a request is waiting
 *   for its answer, as the HTTP agent's pooled sockets do.
 * - At most {@link FRAMES_MAX_PENDING} requests wait on one connection;
 *   the next go over HTTP until some are answered.
 * - The node closes a connection that sends nothing for its idle timeout
 *   (the 101 answer says how long): the connection pings within a third of
 *   it, so an open one stays open, and a ping unanswered for 10 s takes a
 *   dead one down.
 *
 * @module
 */
import type * as Http from 'node:http'
import type * as Https from 'node:https'
import type { Socket } from 'node:net'
import { FRAMES_IDLE_HEADER, FRAMES_MAX_PENDING, FRAMES_PATH, FRAMES_PING_PATH, FRAMES_PROTOCOL } from './wire'
import type { TransportRequest, TransportResponse } from './transport'

/** How long a node that refused the upgrade is served over HTTP before it is asked again. */
const REFUSED_FOR_MS = 30_000
/**
 * An upgrade unanswered this long counts as refused: something between
 * client and node (a proxy passing the Upgrade header on but not the
 * switched connection) may swallow it, and the request still has time to go
 * over HTTP.
 */
const UPGRADE_TIMEOUT_MS = 2_000
/** An answer frame longer than this means the peer is not a zaris node (or is broken): the connection is cut. */
const MAX_ANSWER_BYTES = 256 * 1024 * 1024
const NEWLINE = 10
/** A ping unanswered this long means the connection is dead. */
const PING_TIMEOUT_MS = 10_000
/** The signal of a ping: it ends by its deadline, never by abort. */
const NEVER = new AbortController().signal
/** "Send this one over HTTP": one settled promise for every such answer. */
const NONE: Promise<undefined> = Promise.resolve(undefined)

/** The modules the connections are opened with. */
export interface FrameModules {
  http: typeof Http
  https(): Promise<typeof Https>
}

interface Pending {
  resolve(res: TransportResponse): void
  reject(err: Error): void
  /** How many answers had arrived when this request was sent. */
  seen: number
  /** When it fails unanswered (performance.now() ms); Infinity: only its signal ends it. */
  deadline: number
  signal: AbortSignal
  /** Set only when the signal is the request's own (no deadline): what its abort does. */
  onAbort: (() => void) | undefined
}

/** One upgrade in progress, shared by the requests waiting for it. */
interface Opening {
  promise: Promise<Connection | undefined>
  waiters: number
  abort(): void
}

/** What is known of one node (origin and credentials). */
interface Link {
  conn?: Connection
  opening?: Opening
  refusedUntil: number
}

/**
 * The framed connections of one transport, one per node and token.
 *
 * @example
 * const frames = new Frames({ http, https: () => import('node:https') })
 * const res = await frames.send(request) // undefined: send it over HTTP
 */
export class Frames {
  readonly #modules: FrameModules
  readonly #links = new Map<string, Link>()
  #closed = false

  constructor(modules: FrameModules) {
    this.#modules = modules
  }

  /**
   * Sends a POST over the node's framed connection, opening it if need be.
   * Resolves undefined when this request should go over HTTP instead (the
   * node refused the upgrade, the connection is full, not a plain JSON POST);
   * rejects on network failure. On an open connection: the request's own promise (no hops).
   */
  send(r: TransportRequest): Promise<TransportResponse | undefined> {
    if (this.#closed || r.method !== 'POST' || r.body === undefined || r.body.includes('\n')) return NONE
    const at = r.url.indexOf('/', r.url.indexOf('//') + 2)
    if (at === -1 || r.url.includes('?', at)) return NONE
    const origin = r.url.slice(0, at)
    const authorization = r.headers.authorization
    const key = authorization === undefined ? origin : `${origin} ${authorization}`
    let link = this.#links.get(key)
    if (!link) this.#links.set(key, (link = { refusedUntil: 0 }))
    const conn = link.conn
    if (conn && !conn.closed) return conn.full ? NONE : conn.request(r.url.slice(at), r.body, r.signal, r.deadline ?? Infinity)
    if (link.refusedUntil > Date.now()) return NONE
    return this.#connect(link, origin, authorization, r.signal, r.deadline).then((opened) =>
      opened && !opened.full ? opened.request(r.url.slice(at), r.body!, r.signal, r.deadline ?? Infinity) : undefined,
    )
  }

  /** Closes every connection; requests on them fail. */
  close(): void {
    this.#closed = true
    for (const link of this.#links.values()) {
      link.opening?.abort()
      link.conn?.destroy(new Error('the transport was closed'))
    }
    this.#links.clear()
  }

  /** The link's connection, opened once however many requests wait for it; each waiter gives up on its own signal. */
  async #connect(link: Link, origin: string, authorization: string | undefined, outer: AbortSignal, deadline: number | undefined): Promise<Connection | undefined> {
    // Rare (once per connection): a signal with the deadline in it is cheap enough here.
    const signal = deadline === undefined ? outer : AbortSignal.any([outer, AbortSignal.timeout(Math.max(0, Math.ceil(deadline - performance.now())))])
    if (!link.opening) {
      const controller = new AbortController()
      const opening: Opening = {
        promise: this.#upgrade(origin, authorization, controller.signal),
        waiters: 0,
        abort: () => {
          // At once, not when the aborted request errors: a request that comes meanwhile opens anew.
          if (link.opening === opening) link.opening = undefined
          controller.abort(new Error('no one waits for this connection any more'))
        },
      }
      link.opening = opening
      opening.promise.then(
        (conn) => {
          if (link.opening === opening) link.opening = undefined
          if (!conn) link.refusedUntil = Date.now() + REFUSED_FOR_MS
          else if (this.#closed) conn.destroy(new Error('the transport was closed'))
          else {
            link.conn = conn
            conn.onClose = () => {
              if (link.conn === conn) link.conn = undefined
            }
          }
        },
        () => {
          if (link.opening === opening) link.opening = undefined
        },
      )
    }
    const opening = link.opening
    opening.waiters++
    try {
      return await untilAborted(opening.promise, signal)
    } finally {
      opening.waiters--
      if (signal.aborted && opening.waiters === 0 && link.opening === opening) opening.abort()
    }
  }

  /** Asks the node to switch to frames: a connection on 101, undefined on any other answer. */
  async #upgrade(origin: string, authorization: string | undefined, signal: AbortSignal): Promise<Connection | undefined> {
    const mod = origin.startsWith('https:') ? await this.#modules.https() : this.#modules.http
    return new Promise<Connection | undefined>((resolve, reject) => {
      const headers: Record<string, string> = { connection: 'Upgrade', upgrade: FRAMES_PROTOCOL }
      if (authorization !== undefined) headers.authorization = authorization
      const req = mod.request(`${origin}${FRAMES_PATH}`, { method: 'GET', headers, agent: false })
      // Not the request's own `signal` option: once upgraded, the socket outlives the request.
      const onAbort = () => req.destroy(signal.reason as Error)
      signal.addEventListener('abort', onAbort, { once: true })
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort)
        req.destroy()
        resolve(undefined)
      }, UPGRADE_TIMEOUT_MS)
      timer.unref()
      req.on('error', (err) => {
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        reject(err)
      })
      req.on('response', (res) => {
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        // Anything but 101: this node (or what stands before it) speaks HTTP only.
        res.resume()
        resolve(undefined)
      })
      req.on('upgrade', (res, socket: Socket, head: Buffer) => {
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        if (res.statusCode !== 101 || String(res.headers.upgrade ?? '').toLowerCase() !== FRAMES_PROTOCOL) {
          socket.destroy()
          resolve(undefined)
          return
        }
        if (signal.aborted) {
          socket.destroy()
          reject(signal.reason as Error)
          return
        }
        const idle = Number(res.headers[FRAMES_IDLE_HEADER])
        resolve(new Connection(socket, head, origin, Number.isFinite(idle) && idle > 0 ? idle : undefined))
      })
      req.end()
    })
  }
}

/** One framed connection to a node. */
class Connection {
  closed = false
  onClose: (() => void) | undefined
  readonly #socket: Socket
  readonly #origin: string
  readonly #pending = new Map<number, Pending>()
  #nextId = 0
  /** The one timer that fails requests past their deadline, and when it fires. */
  #timer: ReturnType<typeof setTimeout> | undefined
  #timerAt = Infinity
  /** Answers received: a request that times out with none since it was sent suspects the connection. */
  #received = 0
  #parts: Buffer[] = []
  #size = 0

  /** When the last frame was sent (performance.now() ms), and the timer that pings when that gets old. */
  #lastSent = performance.now()
  #ping: ReturnType<typeof setInterval> | undefined

  constructor(socket: Socket, head: Buffer, origin: string, idleMs: number | undefined) {
    this.#socket = socket
    this.#origin = origin
    if (idleMs !== undefined) {
      // The node closes a connection that sends nothing for idleMs: a ping within a third of it keeps a live one open.
      const every = Math.max(100, idleMs / 3)
      this.#ping = setInterval(() => this.#keepOpen(every), every)
      this.#ping.unref()
    }
    socket.setNoDelay(true)
    socket.setKeepAlive(true, 15_000)
    // Idle, the connection does not keep the process alive; a waiting request refs it.
    socket.unref()
    socket.on('data', (chunk: Buffer) => this.#onData(chunk))
    socket.on('error', () => {})
    socket.on('close', () => this.destroy(new Error(`the connection to ${this.#origin} closed`)))
    if (head.length > 0) this.#onData(head)
  }

  /** Whether as many requests wait as one connection may carry. */
  get full(): boolean {
    return this.#pending.size >= FRAMES_MAX_PENDING
  }

  request(path: string, body: string, signal: AbortSignal, deadline: number): Promise<TransportResponse> {
    return new Promise<TransportResponse>((resolve, reject) => {
      if (this.closed) return reject(new Error(`the connection to ${this.#origin} closed`))
      if (signal.aborted) return reject(signal.reason as Error)
      const id = this.#nextId++
      const pending: Pending = { resolve, reject, seen: this.#received, deadline, signal, onAbort: undefined }
      // With a deadline the signal is the adapter's close signal, shared by every request, and the adapter
      // closes this transport when it fires: a listener each would only pile up on it (nor is the closure made).
      if (deadline === Infinity) {
        pending.onAbort = () => this.#giveUp(id, pending, signal.reason as Error)
        signal.addEventListener('abort', pending.onAbort, { once: true })
      }
      this.#pending.set(id, pending)
      if (this.#pending.size === 1) this.#socket.ref()
      if (deadline < this.#timerAt) this.#arm(deadline)
      this.#lastSent = performance.now()
      this.#socket.write(`{"id":${id},"path":${JSON.stringify(path)},"body":${body}}\n`)
    })
  }

  /** Pings when nothing was sent for `every` ms; an unanswered ping, like any request, takes a dead connection down. */
  #keepOpen(every: number): void {
    if (this.closed || performance.now() - this.#lastSent < every) return
    this.request(FRAMES_PING_PATH, '{}', NEVER, performance.now() + PING_TIMEOUT_MS).catch(() => {})
  }

  /** A request that stops waiting (its signal, or its deadline). */
  #giveUp(id: number, pending: Pending, why: Error): void {
    if (this.#pending.get(id) !== pending) return
    this.#forget(id, pending)
    pending.reject(why)
    // Nothing came back since it was sent: the connection may be dead, so the retry gets a new one.
    if (this.#received === pending.seen) this.destroy(new Error(`no answer from ${this.#origin} on its connection`))
  }

  /**
   * Sets the timer to `at`. One timer serves every request: it is not
   * cleared when requests are answered, and when it fires it fails those
   * past their deadline and is set again for the earliest left, so with
   * answers coming it runs about once per timeout, not once per request.
   */
  #arm(at: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timerAt = at
    this.#timer = setTimeout(() => this.#sweep(), Math.max(0, at - performance.now()))
    // The socket, ref'd while a request waits, is what keeps the process alive.
    this.#timer.unref()
  }

  #sweep(): void {
    this.#timer = undefined
    this.#timerAt = Infinity
    const now = performance.now()
    let next = Infinity
    for (const [id, p] of [...this.#pending]) {
      if (p.deadline <= now) {
        this.#giveUp(id, p, new Error(`no answer within the deadline from ${this.#origin}`))
        if (this.closed) return
      } else if (p.deadline < next) next = p.deadline
    }
    if (next < Infinity) this.#arm(next)
  }

  /** Cuts the connection; every waiting request fails with `why`. */
  destroy(why: Error): void {
    if (this.closed) return
    this.closed = true
    if (this.#ping !== undefined) clearInterval(this.#ping)
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#socket.destroy()
    const pending = [...this.#pending]
    this.#pending.clear()
    for (const [, p] of pending) {
      if (p.onAbort) p.signal.removeEventListener('abort', p.onAbort)
      p.reject(why)
    }
    this.onClose?.()
  }

  #forget(id: number, pending: Pending): void {
    this.#pending.delete(id)
    if (pending.onAbort) pending.signal.removeEventListener('abort', pending.onAbort)
    if (this.#pending.size === 0) this.#socket.unref()
  }

  #onData(chunk: Buffer): void {
    let start = 0
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start)
      if (nl === -1) break
      let line: Buffer
      if (this.#parts.length > 0) {
        this.#parts.push(chunk.subarray(start, nl))
        line = Buffer.concat(this.#parts, this.#size + nl - start)
        this.#parts = []
        this.#size = 0
      } else {
        line = chunk.subarray(start, nl)
      }
      start = nl + 1
      this.#onAnswer(line)
      if (this.closed) return
    }
    if (start < chunk.length) {
      this.#size += chunk.length - start
      if (this.#size > MAX_ANSWER_BYTES) return this.destroy(new Error(`${this.#origin} sent an answer frame over ${MAX_ANSWER_BYTES} bytes`))
      this.#parts.push(chunk.subarray(start))
    }
  }

  #onAnswer(line: Buffer): void {
    this.#received++
    let answer: { id?: unknown; status?: unknown; body?: unknown }
    try {
      answer = JSON.parse(line.toString('utf8')) as typeof answer
    } catch {
      return this.destroy(new Error(`${this.#origin} sent a frame that is not JSON; is it a zaris node?`))
    }
    const { id, status, body } = answer ?? {}
    if (id === null) {
      // The node could not read one of our frames and closes; say why to the requests that fail with it.
      const message = (body as { error?: { message?: unknown } } | undefined)?.error?.message
      return this.destroy(new Error(`${this.#origin} refused a frame: ${typeof message === 'string' ? message : 'unknown error'}`))
    }
    if (typeof id !== 'number' || typeof status !== 'number') {
      return this.destroy(new Error(`${this.#origin} sent a frame without id or status; is it a zaris node?`))
    }
    const pending = this.#pending.get(id)
    // An answer to a request that gave up (timed out) is dropped.
    if (!pending) return
    this.#forget(id, pending)
    pending.resolve(new FramedResponse(status, body))
  }
}

/**
 * An answer frame as a transport response; the body was parsed with the
 * frame, so `json()` skips a second parse. A class, not an object literal of
 * closures: one is made per request.
 */
class FramedResponse implements TransportResponse {
  readonly status: number
  readonly #body: unknown

  constructor(status: number, body: unknown) {
    this.status = status
    this.#body = body
  }

  json(): Promise<unknown> {
    return Promise.resolve(this.#body)
  }

  text(): Promise<string> {
    return Promise.resolve(JSON.stringify(this.#body) ?? '')
  }

  async *chunks(): AsyncIterable<Uint8Array> {
    yield new TextEncoder().encode(JSON.stringify(this.#body) ?? '')
  }

  cancel(): void {}
}

/** `promise`, or a rejection with the signal's reason once it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort)
        resolve(v)
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(err as Error)
      },
    )
  })
}
