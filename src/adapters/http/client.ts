/**
 * The HTTP adapter: a client of zaris nodes, `zaris://host:port/ns` or
 * `http(s)://host:port/ns`, the same in Node and in the browser.
 *
 * - Several addresses (`zaris://h1:7861,h2:7861/ns`) fail over in order, and
 *   requests stay with the first node that answers. They are meant for nodes
 *   that share one store (a Redis behind them); nodes with separate stores are
 *   separate lock domains, and failing over between them breaks exclusivity.
 * - Every commit carries a request id, reused when it is retried, so a commit
 *   whose answer was lost is not applied twice by a node that saw it.
 * - Errors from the node travel as `{ code, message }` and are rebuilt with
 *   `errorFromJSON`; a node nobody can reach gives `UnavailableError`.
 * - A lock holder counts its TTL on its own clock from before its request,
 *   so the client's and the node's clocks need not agree.
 * - All watches of one adapter share one event stream of the namespace
 *   (`./watch-hub`): one connection however many watches and lock waiters
 *   there are, which a browser's six connections per origin need.
 *
 * @module
 */
import type { Adapter, Capabilities, CommitOptions, CommitResult, Entry, ListOptions, ListPage, Unsubscribe, WatchEvent } from '../../core/contract/adapter'
import { ClosedError, InvalidArgumentError, UnauthorizedError, UnavailableError, ZarisError, errorFromJSON } from '../../core/contract/errors'
import { randomHex } from '../../core/contract/ids'
import { checkKey, checkListOptions, checkPrefix, checkWatchArgs } from '../../core/contract/validate'
import { BadAnswer, readCommit, readError, readEvents, readFilter, readGet, readList } from './answers'
import { API_PREFIX, NAMESPACE_PATTERN } from './wire'
import { pageExit, type PageExit } from './page-exit'
import { fetchTransport, hasNodeHttp, type Transport } from './transport'
import { WatchHub, type HistoryPage, type HubContext } from './watch-hub'
import { asError, pause } from './watch-stream'
import { NONE, ON_CHANGE, ON_CHANGE_KEEP, ON_CHANGE_KEEP_OR, plainOf, waitOf, type CommitBody } from './waiting'
import { StreamAnswers } from './stream-answers'

/** Options of {@link httpAdapter}. */
export interface HttpAdapterOptions {
  /** Node base URLs, tried in order: `http://127.0.0.1:7861`. */
  endpoints: string[]
  /** The namespace on the node. */
  namespace: string
  /** Bearer token of a node started with `--token`. */
  token?: string
  /** `auto` (default): node:http in Node, fetch elsewhere. Or a transport of your own. */
  transport?: 'auto' | 'fetch' | 'node' | Transport
  /** Ms one attempt may take before it counts as failed. Default 10 000. */
  timeout?: number
  /**
   * Extra rounds over the endpoints before a request fails with
   * UnavailableError, after a backoff that doubles from 100 ms to at most 1 s
   * (jittered), and none starts once the attempts took 3 × `timeout` in
   * all. Default 6: about 2-3.5 s against a node that refuses connections,
   * long enough for a node that restarts to answer a commit's retry, which
   * is then known rather than lost.
   */
  retries?: number
  /** Ms a broken watch keeps reconnecting before it ends with UnavailableError. Default 60 000. */
  watchReconnectLimit?: number
  /**
   * Ms the shared watch stream stays open after the last watch ended, ready
   * for the next one (it never keeps a Node process alive meanwhile). Default 2 000.
   */
  watchLinger?: number
}

/**
 * Creates an adapter on zaris nodes.
 *
 * @example
 * import { Client } from 'zaris'
 * import { httpAdapter } from 'zaris/http'
 * const client = new Client(httpAdapter({ endpoints: ['http://127.0.0.1:7861'], namespace: 'demo' }))
 */
export function httpAdapter(options: HttpAdapterOptions): Adapter {
  return new HttpAdapter(options)
}

class HttpAdapter implements Adapter {
  readonly name = 'http'
  /** Whether takes may wait at the node (`waitChange`): until the node refuses the field. */
  #onChange = true
  /**
   * In a page, a waiting take holds no connection: the node answers its POST
   * at once and its outcome on the watch stream (./stream-answers), since a
   * browser's pages share six HTTP/1.1 connections to a node.
   */
  readonly #answers: StreamAnswers | undefined
  /** Whether the node is taken to understand `keepParked` (until it refuses the field). */
  #keep = true
  /** Whether the node's store is taken to choose among other ways (`orElse`), until it refuses them. */
  #orElse = true
  readonly #endpoints: string[]
  readonly #namespace: string
  readonly #headers: Record<string, string>
  readonly #timeout: number
  readonly #rounds: number
  readonly #reconnectLimit: number
  readonly #linger: number
  readonly #choice: HttpAdapterOptions['transport']
  readonly #closer = new AbortController()
  #hub: WatchHub | undefined
  #transport: Promise<Transport> | undefined
  /** The transport once `#transport` has settled: a call spares the await on it. */
  #ready: Transport | undefined
  #preferred = 0
  /** The highest revision seen in an answer: a new watch never reports older changes. */
  #seen = -1
  /** Request ids are this adapter's random prefix and a counter: unique, and cheap to make. */
  readonly #idPrefix = randomHex(16)
  #ids = 0
  /** In a page: what this adapter holds, released with keepalive requests on `pagehide` (./page-exit). */
  readonly #exit: PageExit | undefined

  constructor(options: HttpAdapterOptions) {
    if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('httpAdapter: options must be an object')
    if (!Array.isArray(options.endpoints) || options.endpoints.length === 0) {
      throw new InvalidArgumentError('endpoints must be a non-empty array of node URLs like http://127.0.0.1:7861')
    }
    this.#endpoints = options.endpoints.map((e) => {
      if (typeof e !== 'string' || !/^https?:\/\/[^/?#\s]+$/i.test(e.replace(/\/+$/, ''))) {
        throw new InvalidArgumentError(`endpoints: ${JSON.stringify(e)} is not a node URL like http://127.0.0.1:7861`)
      }
      return e.replace(/\/+$/, '')
    })
    if (typeof options.namespace !== 'string' || !NAMESPACE_PATTERN.test(options.namespace)) {
      throw new InvalidArgumentError('namespace may use only letters, digits and . _ ~ - (1-128 characters)')
    }
    this.#namespace = options.namespace
    this.#headers = { accept: 'application/json' }
    if (options.token !== undefined) {
      if (typeof options.token !== 'string' || options.token === '' || /\s/.test(options.token)) {
        throw new InvalidArgumentError('token must be a non-empty string without whitespace')
      }
      this.#headers.authorization = `Bearer ${options.token}`
    }
    this.#timeout = positive(options.timeout, 10_000, 'timeout')
    const retries = options.retries ?? DEFAULT_RETRIES
    if (!Number.isSafeInteger(retries) || retries < 0) throw new InvalidArgumentError(`retries must be an integer >= 0, got ${String(retries)}`)
    this.#rounds = 1 + retries
    this.#reconnectLimit = positive(options.watchReconnectLimit, 60_000, 'watchReconnectLimit')
    this.#linger = options.watchLinger === 0 ? 0 : positive(options.watchLinger, 2_000, 'watchLinger')
    this.#choice = options.transport ?? 'auto'
    this.#answers = hasNodeHttp()
      ? undefined
      : new StreamAnswers({
          hub: () => (this.#hub ??= new WatchHub(this.#hubContext())),
          commit: (body, read) => this.#call('commit', body, read),
          timeoutMs: this.#timeout,
          older: () => (this.#onChange = false),
          noOtherWays: (refused) => this.#noOtherWays(refused),
        })
    this.#exit = pageExit(() => ({ url: this.#url(this.#endpoints[this.#preferred]!, 'commit'), headers: this.#headers }))
  }

  get capabilities(): Capabilities {
    return this.#onChange ? (this.#keep ? (this.#orElse ? ON_CHANGE_KEEP_OR : ON_CHANGE_KEEP) : ON_CHANGE) : NONE
  }

  async get(key: string): Promise<Entry | undefined> {
    checkKey(key)
    const entry = await this.#call('get', { key }, readGet)
    if (entry) this.#saw(entry.revision)
    return entry
  }

  async list(prefix: string, options?: ListOptions): Promise<ListPage> {
    checkPrefix(prefix)
    const { after, limit } = checkListOptions(options)
    // (An option not given is undefined: JSON leaves it out.)
    const page = await this.#call('list', { prefix, after, limit }, readList)
    for (const e of page.entries) this.#saw(e.revision)
    return page
  }

  async commit(checks: Parameters<Adapter['commit']>[0], ops: Parameters<Adapter['commit']>[1], options?: CommitOptions): Promise<CommitResult> {
    // One id for every attempt of this commit: the node answers a retry with the first result.
    const requestId = options?.requestId ?? `${this.#idPrefix}-${(this.#ids++).toString(36)}`
    // The highest revision seen: a node whose store lost its state (a restarted memory node) moves above it.
    const body: CommitBody = this.#seen > 0 ? { checks, ops, requestId, seen: this.#seen } : { checks, ops, requestId }
    const wait = this.#onChange ? waitOf(options?.waitChange) : 0
    let r: CommitResult
    if (wait > 0) {
      body.waitChange = wait
      if (options!.keepParked && this.#keep) Object.assign(body, { keepParked: true, parkOrder: options!.parkOrder, wakeOwner: options!.wakeOwner, orElse: this.#orElse ? options!.orElse : undefined })
      r = this.#answers && body.checks.length > 0 ? await this.#answers.commit(body, wait) : await this.#waiting(body, wait)
    } else r = await this.#call('commit', body, readCommit)
    this.#exit?.saw(ops, r)
    if (r.ok) this.#saw(r.revision)
    else for (const f of r.failed) if (f.entry) this.#saw(f.entry.revision)
    return r
  }

  /**
   * A commit the node may keep waiting. A node older than a field refuses it
   * (its strict schema): the commit goes again without it, and the field is
   * never sent again (`keepParked` and `parkOrder` first: they are the newer).
   */
  async #waiting(body: CommitBody, wait: number): Promise<CommitResult> {
    for (;;) {
      try {
        return await this.#call('commit', body, readCommit, 'POST', undefined, body.waitChange ? wait : undefined)
      } catch (err) {
        const refused = err instanceof ZarisError && err.code === 'INVALID_ARGUMENT' ? err.message : ''
        if (body.orElse && this.#noOtherWays(refused)) return this.#call('commit', plainOf(body), readCommit)
        const keep = body.keepParked && /keepParked|parkOrder|wakeOwner/.test(refused)
        if (!keep && !(body.waitChange && refused.includes('waitChange'))) throw err
        if (!keep) [this.#onChange, body.waitChange] = [false, undefined]
        this.#keep = false
        body.keepParked = body.parkOrder = body.wakeOwner = undefined
      }
    }
  }

  /**
   * Whether the node refused other ways (its store cannot choose among them, or it is older): never sent
   * again, nor `orElse` claimed. The commit that carried them is tried once at once; its caller plans again.
   */
  #noOtherWays(refused: string): boolean {
    if (!refused.includes('orElse')) return false
    this.#orElse = false
    return true
  }

  async watch(prefix: string, sink: Parameters<Adapter['watch']>[1], fromRevision?: number): Promise<Unsubscribe> {
    this.#assertOpen()
    checkWatchArgs(prefix, sink, fromRevision)
    this.#hub ??= new WatchHub(this.#hubContext())
    // Revisions seen in events count too: a token read from a watch must not come back either.
    // The sink's other members as they are (`error`, `reconnecting`): a sink's members are plain functions.
    const counted = {
      ...sink,
      event: (ev: WatchEvent) => {
        this.#saw(ev.revision)
        sink.event(ev)
      },
    }
    return this.#hub.watch(prefix, counted, fromRevision)
  }

  async close(): Promise<void> {
    if (this.#closer.signal.aborted) return
    this.#closer.abort(new ClosedError('the http adapter is closed'))
    this.#exit?.close()
    this.#hub?.close()
    const t = this.#transport
    this.#transport = undefined
    this.#ready = undefined
    if (t) (await t.catch(() => undefined))?.close()
  }

  #assertOpen(): void {
    if (this.#closer.signal.aborted) throw new ClosedError('the http adapter is closed')
  }

  #url(endpoint: string, op: string): string {
    return `${endpoint}${API_PREFIX}/${this.#namespace}/${op}`
  }

  #getTransport(): Promise<Transport> {
    if (this.#transport) return this.#transport
    const pending = (async () => {
      const choice = this.#choice
      if (typeof choice === 'object') return choice
      if (choice === 'node' || (choice === 'auto' && hasNodeHttp())) {
        const { nodeTransport } = await import('./node-transport')
        return nodeTransport()
      }
      return fetchTransport()
    })()
    this.#transport = pending
    // (Settled after a close, it is set on a closed adapter, whose calls refuse before they look.)
    pending.then(
      (t) => (this.#ready = t),
      () => {},
    )
    return pending
  }

  #saw(revision: number): void {
    if (revision > this.#seen) this.#seen = revision
  }

  /**
   * Posts `payload` to `op` (or GETs it with `payload` as the query), failing
   * over across endpoints and retrying in rounds with backoff; `read`
   * checks the answer (./answers) and builds what the call resolves.
   */
  async #call<T>(op: string, payload: unknown, read: (json: unknown) => T, method: 'GET' | 'POST' = 'POST', only?: number, extraMs = 0): Promise<T> {
    this.#assertOpen()
    const transport = this.#ready ?? (await this.#getTransport())
    const body = method === 'POST' ? JSON.stringify(payload) : undefined
    const query = method === 'GET' ? `?${new URLSearchParams(payload as Record<string, string>)}` : ''
    const headers: Record<string, string> = method === 'POST' ? { ...this.#headers, 'content-type': 'application/json' } : { ...this.#headers }
    // `only`: the one endpoint that can answer (a filter names a stream of that node).
    const n = only === undefined ? this.#endpoints.length : 1
    let lastError: Error | undefined
    // Rounds are for nodes that refuse or drop connections (a restart): a node that lets each attempt
    // run out its timeout gets no more than 3 of them, as before there were 6 rounds.
    const started = performance.now()
    const budget = 3 * (this.#timeout + extraMs)
    for (let round = 0; round < this.#rounds; round++) {
      if (round > 0) {
        if (performance.now() - started >= budget) break
        await pause(Math.min(100 * 2 ** (round - 1), MAX_BACKOFF_MS) * (0.5 + Math.random() / 2), this.#closer.signal, true) // kept alive: the call is work in progress
      }
      const start = only ?? this.#preferred
      for (let i = 0; i < n; i++) {
        this.#assertOpen()
        const index = (start + i) % n
        const endpoint = this.#endpoints[index]!
        // A transport that keeps deadlines itself spares each attempt a controller, a listener and a timer.
        // `extraMs`: a commit the node may keep waiting that long (waitChange) before it answers.
        const timeout = this.#timeout + extraMs
        const deadline = transport.deadlines ? performance.now() + timeout : undefined
        const signal = deadline === undefined ? anySignal(this.#closer.signal, timeout) : untimed(this.#closer.signal, deadline)
        let status: number
        let text = ''
        let parsed: { json: unknown } | undefined
        try {
          const res = await transport.send({ method, url: this.#url(endpoint, op) + query, headers, body, signal: signal.signal, deadline })
          status = res.status
          // An answer frame comes parsed already.
          if (status === 200 && res.json) parsed = { json: await res.json() }
          else text = await res.text()
        } catch (err) {
          this.#assertOpen()
          lastError = signal.timedOut() ? new Error(`no answer within ${timeout} ms`) : asError(err)
          continue
        } finally {
          signal.dispose()
        }
        if (status === 200) {
          if (only === undefined) this.#preferred = index
          let json: unknown
          if (parsed) json = parsed.json
          else {
            try {
              json = JSON.parse(text)
            } catch {
              throw new ZarisError('INTERNAL', `${endpoint} answered ${op} with something that is not JSON; is it a zaris node?`)
            }
          }
          try {
            return read(json)
          } catch (err) {
            if (!(err instanceof BadAnswer)) throw err
            throw new ZarisError('INTERNAL', `${endpoint} sent an invalid ${op} response: ${err.message}`)
          }
        }
        const error = errorOf(status, text, endpoint)
        // A node that cannot serve right now (shutting down, its store unreachable): try the next.
        if (status === 502 || status === 503 || status === 504) {
          lastError = error
          continue
        }
        throw error
      }
    }
    throw new UnavailableError(
      `no zaris node answered ${op} (${this.#endpoints.join(', ')}): ${lastError?.message ?? 'unknown error'}`,
      { cause: lastError },
    )
  }

  #hubContext(): HubContext {
    return {
      transport: () => this.#getTransport(),
      endpoints: this.#endpoints,
      preferred: () => this.#preferred,
      prefer: (i) => {
        this.#preferred = i
      },
      url: (endpoint, op) => this.#url(endpoint, op),
      headers: () => ({ ...this.#headers }),
      timeoutMs: this.#timeout,
      rounds: this.#rounds,
      reconnectLimitMs: this.#reconnectLimit,
      lingerMs: this.#linger,
      errorOf,
      history: async (prefix, after, epoch): Promise<HistoryPage> => {
        const query: Record<string, string> = { prefix, after: String(after) }
        if (epoch !== undefined) query.epoch = epoch
        return this.#call('events', query, readEvents, 'GET')
      },
      seen: () => this.#seen,
      answer: (json) => this.#answers?.told(json),
      filter: (endpoint, body) => this.#call('filter', body, readFilter, 'POST', endpoint),
    }
  }
}

/** The error a node's non-200 answer stands for. */
function errorOf(status: number, text: string, endpoint: string): ZarisError {
  try {
    const error = readError(JSON.parse(text))
    if (error) return errorFromJSON(error)
  } catch {
    // not JSON: fall through
  }
  if (status === 401) return new UnauthorizedError(`${endpoint} refused the credentials`)
  if (status >= 500) return new UnavailableError(`${endpoint} answered HTTP ${status}`)
  return new ZarisError('INTERNAL', `${endpoint} answered HTTP ${status}; is it a zaris node?`)
}


/** The adapter's close signal as is, for a transport that keeps the deadline itself (a closed adapter's call never asks `timedOut`). */
function untimed(closed: AbortSignal, deadline: number): { signal: AbortSignal; timedOut(): boolean; dispose(): void } {
  return { signal: closed, timedOut: () => performance.now() >= deadline - 1, dispose() {} }
}

/** Aborts on the adapter's close or after `ms`, whichever is first. */
function anySignal(closed: AbortSignal, ms: number): { signal: AbortSignal; timedOut(): boolean; dispose(): void } {
  const controller = new AbortController()
  let timedOut = false
  const onClose = () => controller.abort(closed.reason)
  closed.addEventListener('abort', onClose, { once: true })
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort(new Error('timeout'))
  }, ms)
  ;(timer as { unref?: () => void }).unref?.()
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    dispose() {
      clearTimeout(timer)
      closed.removeEventListener('abort', onClose)
    },
  }
}

/**
 * Rounds after the first, and the longest pause between two: a `--data` node
 * killed and restarted is back in 0.4-1 s (more on a loaded machine); a client
 * that gave up after 2 rounds (about 0.3 s) left every commit it had in flight
 * of unknown outcome, though the node keeps each commit's answer under its
 * request id for the retry that never came.
 */
const DEFAULT_RETRIES = 6
const MAX_BACKOFF_MS = 1_000

function positive(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback
  // (Number.isFinite takes no string or other kind for a number.)
  if (!Number.isFinite(value) || (value as number) <= 0) {
    throw new InvalidArgumentError(`${name} must be a positive number, got ${String(value)}`)
  }
  return value as number
}
