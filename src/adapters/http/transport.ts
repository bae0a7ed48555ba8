/**
 * How the HTTP adapter moves bytes: a small interface with two
 * implementations. Browsers (and any runtime with `fetch`) use
 * {@link fetchTransport}; Node uses `node:http` with a keep-alive agent
 * (`./node-transport`), which on loopback is 2.5-3x faster than Node 20's
 * `fetch`, and sends `get`, `list` and `commit` as frames of one persistent
 * connection per node (`./framed-transport`) where the node accepts it. A transport knows nothing of zaris: it sends a request and hands
 * back the status and the body, whole or as a stream of chunks.
 *
 * @module
 */

/** One HTTP request. */
export interface TransportRequest {
  /** `GET` for watches, `POST` for the rest. */
  method: 'GET' | 'POST'
  /** The absolute URL. */
  url: string
  /** Request headers, lowercase names. */
  headers: Record<string, string>
  /** The JSON body of a POST. */
  body?: string
  /** Aborts the request (and the reading of its body). */
  signal: AbortSignal
  /**
   * When the request fails for want of an answer (`performance.now()` ms).
   * Honoured by a transport that says {@link Transport.deadlines}; the
   * adapter then passes only its close signal, and no timer of its own, and
   * closes the transport when that signal fires (so the transport may check
   * the signal only when the request is sent).
   */
  deadline?: number
}

/** One HTTP response; read it with `text()` or `chunks()`, once. */
export interface TransportResponse {
  /** The HTTP status. */
  status: number
  /** The whole body as text. */
  text(): Promise<string>
  /**
   * The body parsed as JSON, when the transport has it parsed already (an
   * answer frame); absent otherwise: read `text()`.
   */
  json?(): Promise<unknown>
  /** The body as it arrives (a watch stream). */
  chunks(): AsyncIterable<Uint8Array>
  /**
   * The body as it arrives, each chunk handed to `onChunk` in the same tick
   * it is read (no async iterator between the socket and the reader: a watch
   * event reaches its waiter sooner). Resolves when the body ends; rejects
   * when it is cut off or cancelled, or with what `onChunk` threw (the rest
   * is then dropped). Optional: without it, read `chunks()`.
   */
  pipe?(onChunk: (chunk: Uint8Array) => void): Promise<void>
  /** Stops reading and frees the connection. */
  cancel(): void
  /**
   * Whether this response's connection keeps a Node process alive (default
   * true); a watch stream lingering with no subscriber lets go. Optional:
   * where there is no process to keep alive, leave it out.
   */
  ref?(on: boolean): void
}

/**
 * Sends HTTP requests for the adapter. Rejects on network failure (refused,
 * reset, aborted); any HTTP status resolves.
 *
 * @example
 * const t = fetchTransport()
 * const res = await t.send({ method: 'GET', url: 'http://127.0.0.1:7861/healthz', headers: {}, signal: AbortSignal.timeout(1000) })
 */
export interface Transport {
  /** For messages: `fetch` or `node:http`. */
  readonly name: string
  /**
   * True when the transport enforces {@link TransportRequest.deadline}
   * itself (one timer for many requests, not one each): past it, the
   * request rejects.
   */
  readonly deadlines?: boolean
  /** Sends one request; resolves once the status and headers are in. */
  send(request: TransportRequest): Promise<TransportResponse>
  /** Frees pooled connections. */
  close(): void
}

/**
 * A transport over `fetch` (the browser's, or the one given).
 *
 * @example
 * const adapter = httpAdapter({ endpoints: ['http://127.0.0.1:7861'], namespace: 'demo', transport: fetchTransport() })
 */
export function fetchTransport(fetchImpl: typeof fetch = (...args) => globalThis.fetch(...args)): Transport {
  return {
    name: 'fetch',
    async send(r) {
      const res = await fetchImpl(r.url, {
        method: r.method,
        headers: r.headers,
        body: r.body,
        signal: r.signal,
        cache: 'no-store',
        credentials: 'omit',
        redirect: 'error',
      })
      return {
        status: res.status,
        text: () => res.text(),
        chunks: () => readChunks(res.body),
        cancel: () => {
          res.body?.cancel().catch(() => {})
        },
      }
    },
    close() {},
  }
}

/** A web stream as an async iterable (not every browser iterates streams natively). */
async function* readChunks(body: ReadableStream<Uint8Array> | null): AsyncIterable<Uint8Array> {
  if (!body) return
  const reader = body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      yield value
    }
  } finally {
    reader.cancel().catch(() => {})
  }
}

/** True in Node (and runtimes that provide node:http), where the faster transport applies. */
export function hasNodeHttp(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process
  return typeof p?.versions?.node === 'string' && typeof (globalThis as { document?: unknown }).document === 'undefined'
}
