/**
 * Serves a {@link Handler} from Node's http module: the fast path, without
 * building a `Request` and `Response` per call. Slow clients are cut off by
 * header and request timeouts; bodies are read up to the handler's limit and
 * no further (`./node-exchange`); connections are capped in number and in
 * unread output (`./connections`). A request to upgrade to the framed
 * protocol is checked by the handler and, once accepted, served by
 * `./frames`; any other upgrade is refused.
 *
 * @module
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { FRAMES_IDLE_HEADER, FRAMES_PROTOCOL } from './protocol'
import { Connections, type ConnectionLimits } from './connections'
import { serveFrames, type FrameConnection } from './frames'
import { InputBudget } from './input-budget'
import type { Handler } from './handler'
import { exchangeOf, refuseUpgrade, serve } from './node-exchange'
import { collectWhenQuiet } from './quiet-gc'
import { positive } from './options'

/** Options of {@link listen}. */
export interface ListenOptions {
  /** Default 7861; 0 picks a free port. */
  port?: number
  /** Default 127.0.0.1. */
  host?: string
  /** Ms a client has to send its request headers. Default 10 000. */
  headersTimeoutMs?: number
  /** Ms a client has to send its whole request. Default 30 000. */
  requestTimeoutMs?: number
  /** Most open connections (plain, watch streams and framed); one more gets 503. Default 2 048. */
  maxConnections?: number
  /** Unread output that cuts a connection off at once. Default 4 MiB. */
  outputHardBytes?: number
  /** Unread output that cuts a connection off when it lasts `outputSoftMs`. Default 1 MiB. */
  outputSoftBytes?: number
  /** How long, in ms, a connection may stay over `outputSoftBytes` before it is cut. Default 10 s. */
  outputSoftMs?: number
  /** A connection whose unread output does not move for this long is cut off. Default 30 000 ms. */
  sendTimeoutMs?: number
  /** Unread output of all connections together; past it, those holding the most are cut off. Default 64 MiB. */
  maxOutputBytes?: number
  /** A framed connection with nothing in flight that sends nothing (not even a ping) this long is closed. Default 60 000 ms. */
  framesIdleMs?: number
  /** Bytes a framed connection may have reserved for answers in flight and unread, before the node stops reading it. Default 4 MiB. */
  framesInflightBytes?: number
  /**
   * Bytes of requests in progress, all connections together: HTTP bodies
   * being read and served, and what framed requests in flight reserve. A
   * body that finds it spent gets 503; framed connections wait once 3/4 of
   * it is taken, so HTTP bodies keep the rest. Default 64 MiB.
   */
  maxInputBytes?: number
}

/**
 * A listening node.
 *
 * @example
 * const node = await listen(handler, { port: 0 })
 * console.log(node.url) // http://127.0.0.1:49152
 * await node.close()
 */
export interface Listening {
  /** `http://host:port` the node answers on. */
  readonly url: string
  /** The address bound. */
  readonly host: string
  /** The port bound (the one picked, for port 0). */
  readonly port: number
  /** Node's http server, for anything this API does not cover. */
  readonly server: Server
  /** Open connections. */
  readonly connections: number
  /** Stops accepting, ends watch streams and framed connections, waits for open requests (2 s at most) and closes the handler. */
  close(): Promise<void>
}

/**
 * Serves `handler` on a TCP port.
 *
 * @example
 * import { createHandler, listen, memoryBackend } from 'zaris/server'
 * const backend = memoryBackend()
 * const node = await listen(createHandler({ adapterFor: backend.adapterFor }), { port: 7861 })
 */
export async function listen(handler: Handler, options: ListenOptions = {}): Promise<Listening> {
  const limits = connectionLimits(options)
  const framesIdleMs = positive(options.framesIdleMs, 60_000, 'framesIdleMs')
  const framesInflightBytes = positive(options.framesInflightBytes, 4 * 1024 * 1024, 'framesInflightBytes')
  const server = createServer({
    headersTimeout: positive(options.headersTimeoutMs, 10_000, 'headersTimeoutMs'),
    requestTimeout: positive(options.requestTimeoutMs, 30_000, 'requestTimeoutMs'),
    keepAliveTimeout: 5_000,
    // How often the two timeouts above are enforced (Node's default is every 30 s).
    connectionsCheckingInterval: 1_000,
  })
  const metrics = handler.metrics
  const connections = new Connections(server, limits, (reason) => metrics.cut(reason))
  const budget = new InputBudget(positive(options.maxInputBytes, 64 * 1024 * 1024, 'maxInputBytes'))
  metrics.gauge('input_bytes', 'Bytes of requests being read or answered, all connections together.', () => budget.used)
  metrics.gauge('connections', 'Open connections (plain, watch streams and framed).', () => connections.count)
  metrics.gauge('process_resident_bytes', 'Resident memory of the node process.', () => process.memoryUsage.rss())
  metrics.gauge('process_heap_used_bytes', 'JavaScript heap in use (process.memoryUsage().heapUsed).', () => process.memoryUsage().heapUsed)
  metrics.gauge('process_external_bytes', 'Memory of buffers outside the JavaScript heap (process.memoryUsage().external).', () => process.memoryUsage().external)
  metrics.gauge('output_buffered_bytes', 'Bytes answered but not yet read by their peers, all connections together.', () => connections.outputBytes)
  server.on('request', (req, res) => {
    serve(handler, req, res, connections, budget).catch(() => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
      res.end('{"error":{"code":"INTERNAL","message":"internal error"}}')
    })
  })
  const quiet = collectWhenQuiet({ inFlight: () => budget.used + connections.outputBytes })
  metrics.gauge('quiet_collections', 'Garbage collections the node asked for once quiet after load.', () => quiet?.collections ?? 0)
  const framed = new Set<FrameConnection>()
  let closing: Promise<void> | undefined
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => {})
    if (connections.refused(socket as Socket)) {
      const { status, body } = connections.refusal()
      return refuseUpgrade(socket, { status, headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' }, body })
    }
    handler.upgrade(exchangeOf(req)).then(
      (outcome) => {
        if (socket.destroyed) return
        if ('reply' in outcome) return refuseUpgrade(socket, outcome.reply)
        socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${FRAMES_PROTOCOL}\r\n${FRAMES_IDLE_HEADER}: ${framesIdleMs}\r\n\r\n`)
        const conn = serveFrames(socket as Socket, head, outcome.session, {
          maxFrameBytes: handler.maxFrameBytes,
          pageBytes: handler.maxPageBytes,
          maxInflightBytes: framesInflightBytes,
          idleMs: framesIdleMs,
          afterWrite: (s) => connections.checkHard(s),
          onIdle: () => metrics.cut('idle'),
          budget,
        })
        framed.add(conn)
        socket.on('close', () => framed.delete(conn))
        if (closing) conn.end()
      },
      () => socket.destroy(),
    )
  })
  const host = options.host ?? '127.0.0.1'
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 7861, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return {
    url: `http://${shownHost}:${address.port}`,
    host: address.address,
    port: address.port,
    server,
    get connections() {
      return connections.count
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
        connections.close()
        quiet?.stop()
        // Framed connections stop reading now; their clients fail over as they see the end.
        for (const conn of framed) conn.end()
        void handler.close().then(() => {
          server.closeIdleConnections()
          setTimeout(() => {
            server.closeAllConnections()
            for (const conn of framed) conn.destroy()
          }, 2_000).unref()
        })
      })
      return closing
    },
  }
}

function connectionLimits(o: ListenOptions): ConnectionLimits {
  return {
    maxConnections: positive(o.maxConnections, 2_048, 'maxConnections'),
    outputHardBytes: positive(o.outputHardBytes, 4 * 1024 * 1024, 'outputHardBytes'),
    outputSoftBytes: positive(o.outputSoftBytes, 1024 * 1024, 'outputSoftBytes'),
    outputSoftMs: positive(o.outputSoftMs, 10_000, 'outputSoftMs'),
    sendTimeoutMs: positive(o.sendTimeoutMs, 30_000, 'sendTimeoutMs'),
    maxOutputBytes: positive(o.maxOutputBytes, 64 * 1024 * 1024, 'maxOutputBytes'),
  }
}
