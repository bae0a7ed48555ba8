/**
 * The call path: `get`, `list` and `commit` on a parsed JSON body, the one
 * code path of a POST and of a frame (validation, the replay cache, commit
 * metrics). A commit with a `requestId` acts once: a retry gets the original
 * answer.
 *
 * @module
 */
import { InvalidArgumentError, UnsupportedError } from '../core/contract/errors'
import type { CommitResult } from '../core/contract/adapter'
import { commitRequest, getRequest, listRequest, parseWith, toCommitResponse, toGetResponse } from './protocol'
import type { Metrics } from './metrics'
import type { Namespaces } from './namespaces'
import { ListPages } from './list-pages'
import type { Settings } from './options'
import { Parking, type ParkConnection } from './parking'
import { ReplayCache } from './replay-cache'
import { JSON_HEADERS, json, jsonText, toWire, type Exchange, type Reply } from './reply'
import type { SseStream } from './sse-stream'

/** List pages built at once; the next wait their turn (each holds up to a chunk of entries). */
const LIST_CONCURRENCY = 4

/** The routes a frame may name: the POSTs. */
export type CallOp = 'get' | 'list' | 'commit' | 'filter'

/** Serves `filter` (the watch streams own it). */
export type FilterCall = (ns: string, body: unknown) => Promise<Reply>

/** Where a commit sent with `answerOn` gets its outcome: that live watch stream of the namespace, if there is one. */
export type AnswerStreamOf = (ns: string, id: string) => Pick<SseStream, 'parks' | 'answer' | 'stopped'> | undefined

/** The POST's answer to a commit that parked with its outcome due on a stream. */
const PARKED = '{"parked":true}'

/** Serves the calls of one node. */
export class Calls {
  readonly #namespaces: Namespaces
  readonly #metrics: Metrics
  readonly #replays: ReplayCache
  readonly #pages: ListPages
  readonly #filter: FilterCall
  readonly #answerStream: AnswerStreamOf
  /** Commits waiting for a change (`waitChange`). */
  readonly parking: Parking

  constructor(namespaces: Namespaces, metrics: Metrics, settings: Settings, filter: FilterCall, answerStream: AnswerStreamOf = () => undefined) {
    this.#namespaces = namespaces
    this.#filter = filter
    this.#answerStream = answerStream
    this.#metrics = metrics
    this.#replays = new ReplayCache(settings.replay)
    this.parking = new Parking(settings.park)
    this.#pages = new ListPages({ maxEntries: settings.maxPageEntries, maxBytes: settings.maxPageBytes, concurrency: LIST_CONCURRENCY })
  }

  /**
   * Answers `op` on namespace `ns` for a parsed request body. `connOf` gives
   * the connection it came on (its parked commits are bounded and dropped
   * with it); it is asked only by a commit that may wait, since knowing a
   * socket's end costs listeners on it. `early`, where the caller can send an
   * answer before this resolves (a framed connection), is handed the JSON
   * answer of a parked commit in the very step of the store that answers it
   * (`CommitOptions.onAnswer`; the returned reply carries the same).
   *
   * With its namespace open, a commit reaches its store before the first
   * await: a release goes from its frame to the handover in one step.
   */
  async call(ns: string, op: CallOp, body: unknown, connOf?: () => ParkConnection | undefined, early?: (json: string) => void): Promise<Reply> {
    if (op === 'filter') return this.#filter(ns, body)
    const adapter = this.#namespaces.opened(ns) ?? (await this.#namespaces.adapterOf(ns))
    switch (op) {
      case 'get': {
        const { key } = parseWith(getRequest, body, 'body')
        return json(200, toGetResponse(await adapter.get(key)))
      }
      case 'list': {
        const { prefix, after, limit } = parseWith(listRequest, body, 'body')
        return jsonText(200, await this.#pages.page(adapter, prefix, after, limit))
      }
      default: {
        const { checks, ops, requestId, seen, waitChange, keepParked, parkOrder, wakeOwner, answerOn, orElse } = parseWith(commitRequest, body, 'body')
        // Other ways are the store's to choose among in one step: a store that cannot (etcd, Postgres) refuses them, and the client sends none again.
        if (orElse && adapter.capabilities?.orElse !== true) throw new InvalidArgumentError(`orElse: this node's store (${adapter.name}) takes no other ways; send the commit without them`)
        const metrics = this.#metrics
        const parking = this.parking
        // A page's commit: its wait holds no connection; once parked, its outcome goes on its stream (none: no wait).
        // (One with no wait gets its answer in the POST, stream or not: `wait` below.)
        const stream = answerOn === undefined || requestId === undefined ? undefined : this.#answerStream(ns, answerOn)
        const wait = answerOn !== undefined && !stream ? undefined : waitChange
        // The request's text: what a retry must match, and what a parked commit counts against the node's bound
        // (made before the commit only for a commit that may park; a release's waits until its store step is done).
        const shape = () => JSON.stringify(orElse ? [checks, ops, orElse] : [checks, ops])
        const text = wait === undefined ? '' : shape()
        // The answer told early (and its JSON, made once).
        let told: { r: CommitResult; json: string } | undefined
        let parked: (() => void) | undefined
        const parkedNotice = stream && new Promise<undefined>((resolve) => (parked = () => resolve(undefined)))
        let onAnswer = early && ((r: CommitResult) => early((told = { r, json: JSON.stringify(toCommitResponse(r)) }).json))
        if (stream) onAnswer = (r) => stream.answer(requestId!, (told = { r, json: JSON.stringify(toCommitResponse(r)) }).json)
        const apply = async () => {
          // `seen` moves a store that lost its state above what the client saw (bounded: see CommitOptions.seen).
          const options = requestId === undefined && seen === undefined ? undefined : { requestId, seen }
          const started = performance.now()
          const r =
            wait === undefined
              ? await adapter.commit(checks, ops, options)
              : await parking.commit(adapter, checks, ops, options, { ms: wait, keep: keepParked, order: parkOrder, wakeOwner, orElse, bytes: 2 * text.length, onAnswer, onParked: parked }, stream ? () => stream.parks : connOf)
          if (r.ok) metrics.commits++
          else metrics.conflicts++
          metrics.holds.commit(ns, orElse ? checks.concat(...orElse.map((w) => w.checks)) : checks, ops, r, started)
          return told?.r === r ? told.json : JSON.stringify(toCommitResponse(r))
        }
        if (requestId === undefined) return jsonText(200, await apply())
        const running = this.#replays.run(`${ns}\u0000${requestId}`, text || shape, apply)
        const first = parkedNotice ? await Promise.race([running, parkedNotice]) : await running
        if (!first) {
          // Parked: the outcome goes on the stream (told there in the store's step, or here once the commit is done).
          running.then(
            ({ body }) => void (told?.json === body || stream!.answer(requestId, body)),
            (err: Error) => stream!.answer(requestId, JSON.stringify(toWire(err)), true),
          )
          return jsonText(200, PARKED)
        }
        const { body: answer, replayed } = first
        if (replayed) metrics.replays++
        return { status: 200, headers: replayed ? { ...JSON_HEADERS, 'x-zaris-replayed': '1' } : { ...JSON_HEADERS }, body: answer }
      }
    }
  }
}

/** Reads a POST's body as JSON, up to `limit` bytes. */
export async function readJson(ex: Exchange, limit: number): Promise<unknown> {
  const type = ex.header('content-type') ?? ''
  // Only application/json: a cross-origin page cannot send it without a CORS preflight.
  if (!/^application\/json\s*(;|$)/i.test(type)) throw new UnsupportedError('content-type must be application/json')
  const text = await ex.body(limit)
  try {
    return JSON.parse(text)
  } catch {
    throw new InvalidArgumentError('body: malformed JSON')
  }
}
