/**
 * The handler's side of framed connections (the protocol module describes
 * them): deciding on an upgrade request after the same Host and token checks
 * as any request, and answering each request frame through the very code a
 * POST runs ({@link Calls}). `./frames` moves the bytes.
 *
 * @module
 */
import { ClosedError, InvalidArgumentError } from '../core/contract/errors'
import { FRAMES_PATH, FRAMES_PING_PATH, FRAMES_PROTOCOL, answerFrame, parseRequestFrame } from './protocol'
import type { Calls, CallOp } from './calls'
import { ParkConnection } from './parking'
import type { Gate } from './gate'
import type { Metrics } from './metrics'
import { namespaceOf } from './namespaces'
import { errorReply, json, methodNotAllowed, notFound, type Exchange, type Reply } from './reply'
import { ROUTE } from './routes'

/** One answer of a framed connection. */
export interface FrameAnswer {
  /** The answer frame, newline included. */
  frame: string
  /** The request frame could not be read at all: send the answer, then close the connection. */
  fatal: boolean
}

/** A framed connection the node accepted; requests may overlap. */
export interface FrameSession {
  /**
   * Answers one request frame (its text, without the newline). Never rejects.
   * `early` may be handed the answer frame before the promise settles (a
   * parked commit answered in another request's step); the promise then
   * resolves with the same frame, to be counted but not sent again.
   */
  answer(frame: string, early?: (frame: string) => void): Promise<FrameAnswer>
  /** The connection closed: its parked commits are dropped. */
  close?(): void
}

/** The outcome of an upgrade request: a session, or the HTTP reply that refuses it. */
export type UpgradeOutcome = { session: FrameSession } | { reply: Reply }

/** What the frame routes need of the node. */
export interface FrameContext {
  readonly gate: Gate
  readonly calls: Calls
  readonly metrics: Metrics
  readonly log: (line: string) => void
  /** True once the node is shutting down. */
  closed(): boolean
}

/** Upgrades to framed connections, and answers their frames. */
export class FrameRoutes {
  readonly #ctx: FrameContext

  constructor(ctx: FrameContext) {
    this.#ctx = ctx
  }

  /** Decides on a request for a framed connection, checking it like any request. */
  async upgrade(ex: Exchange): Promise<UpgradeOutcome> {
    const started = performance.now()
    let outcome: UpgradeOutcome
    try {
      if (this.#ctx.closed()) throw new ClosedError('the node is shutting down')
      const refused = this.#ctx.gate.crossSiteRefusal(ex) ?? this.#ctx.gate.hostRefusal(ex)
      if (refused) outcome = { reply: refused }
      else {
        await this.#ctx.gate.checkBearer(ex)
        outcome = this.#decide(ex)
      }
    } catch (err) {
      outcome = { reply: errorReply(err, this.#ctx.log) }
    }
    if ('reply' in outcome) outcome.reply.headers['x-content-type-options'] = 'nosniff'
    this.#ctx.metrics.observe('frames', 'session' in outcome ? 101 : outcome.reply.status, (performance.now() - started) / 1000)
    return outcome
  }

  /** One request frame, answered: the frame's route runs through {@link Calls} like a POST; `early` as in {@link FrameSession.answer}. */
  async answer(text: string, conn?: ParkConnection, early?: (frame: string) => void): Promise<FrameAnswer> {
    const started = performance.now()
    const { metrics, log } = this.#ctx
    let id: number
    let path: string | undefined
    let body: unknown
    try {
      ;({ id, path, body } = parseRequestFrame(text))
    } catch (err) {
      const reply = errorReply(err, log)
      metrics.observe('frames', reply.status, (performance.now() - started) / 1000)
      return { frame: answerFrame(null, reply.status, 'body' in reply ? reply.body : '{}'), fatal: true }
    }
    let routeName = 'other'
    let reply: Reply
    try {
      if (this.#ctx.closed()) throw new ClosedError('the node is shutting down')
      if (path === undefined) throw new InvalidArgumentError('frame.path: must be a path like /v1/<ns>/get (at most 512 characters)')
      const m = ROUTE.exec(path)
      if (path === FRAMES_PING_PATH) {
        routeName = 'ping'
        reply = json(200, {})
      } else if (!m) {
        reply = notFound(path.slice(0, 200))
      } else {
        const op = m[2]!
        routeName = op
        const ns = namespaceOf(m[1]!)
        if (op === 'watch' || op === 'events') {
          reply = json(400, { error: { code: 'INVALID_ARGUMENT', message: `${op} is not served over frames; use GET ${path.slice(0, 200)}` } })
        } else {
          reply = await this.#ctx.calls.call(ns, op as CallOp, body, conn && (() => conn), early && ((json) => early(answerFrame(id, 200, json))))
        }
      }
    } catch (err) {
      reply = errorReply(err, log)
    }
    metrics.observe(routeName, reply.status, (performance.now() - started) / 1000)
    return { frame: answerFrame(id, reply.status, 'body' in reply ? reply.body : '{}'), fatal: false }
  }

  #decide(ex: Exchange): UpgradeOutcome {
    const path = ex.url.pathname
    if (path !== FRAMES_PATH) return { reply: notFound(`upgrade at ${path.slice(0, 200)}; use ${FRAMES_PATH}`) }
    if (ex.method !== 'GET') return { reply: methodNotAllowed('GET') }
    if ((ex.header('upgrade') ?? '').trim().toLowerCase() !== FRAMES_PROTOCOL) {
      return { reply: json(400, { error: { code: 'INVALID_ARGUMENT', message: `upgrade: only ${FRAMES_PROTOCOL} is served here` } }) }
    }
    // One session per connection: its parked commits are counted and dropped with it.
    const conn = new ParkConnection()
    return { session: { answer: (text, early) => this.answer(text, conn, early), close: () => conn.close() } }
  }
}
