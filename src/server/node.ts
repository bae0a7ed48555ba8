/**
 * Serves a {@link Handler} from Node's http module: the fast path, without
 * building a `Request` and `Response` per call. Slow clients are cut off by
 * header and request timeouts; bodies are read up to the handler's limit and
 * no further. A request to upgrade to the framed protocol is checked by the
 * handler and, once accepted, served by `./frames`; any other upgrade is refused.
 *
 * @module
 */
import { STATUS_CODES, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { InvalidArgumentError } from '../core/errors'
import { FRAMES_PROTOCOL } from '../adapters/http/protocol'
import { serveFrames, type FrameConnection } from './frames'
import type { Handler } from './handler'
import { tooLarge, type Exchange, type Reply } from './reply'

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
  /** Stops accepting, ends watch streams and framed connections, waits for open requests (2 s at most) and closes the handler. */
  close(): Promise<void>
}

/** Bytes of a refused body read and dropped before the answer; past this the connection is cut. */
const MAX_DRAIN = 4 * 1024 * 1024

/** A streamed reply whose peer has this much unsent is cut off (it resumes from its last revision). */
const MAX_BUFFERED = 1024 * 1024

/**
 * Serves `handler` on a TCP port.
 *
 * @example
 * import { createHandler, listen, memoryBackend } from 'zaris/server'
 * const backend = memoryBackend()
 * const node = await listen(createHandler({ adapterFor: backend.adapterFor }), { port: 7861 })
 */
export async function listen(handler: Handler, options: ListenOptions = {}): Promise<Listening> {
  const server = createServer(
    {
      headersTimeout: options.headersTimeoutMs ?? 10_000,
      requestTimeout: options.requestTimeoutMs ?? 30_000,
      keepAliveTimeout: 5_000,
      // How often the two timeouts above are enforced (Node's default is every 30 s).
      connectionsCheckingInterval: 1_000,
    },
    (req, res) => {
      serve(handler, req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
        res.end('{"error":{"code":"INTERNAL","message":"internal error"}}')
      })
    },
  )
  const framed = new Set<FrameConnection>()
  let closing: Promise<void> | undefined
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => {})
    handler.upgrade(exchangeOf(req)).then(
      (outcome) => {
        if (socket.destroyed) return
        if ('reply' in outcome) return refuse(socket, outcome.reply)
        socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${FRAMES_PROTOCOL}\r\n\r\n`)
        const conn = serveFrames(socket as Socket, head, outcome.session, { maxFrameBytes: handler.maxFrameBytes })
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
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
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

function exchangeOf(req: IncomingMessage): Exchange {
  return {
    method: req.method ?? 'GET',
    // The Host header is not trusted to build URLs; only the path and query are used.
    url: new URL(req.url ?? '/', 'http://zaris.invalid'),
    header: (name) => {
      const v = req.headers[name]
      return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v
    },
    body: (limit) => readBody(req, limit),
  }
}

/** Answers a refused upgrade on the raw socket (no ServerResponse exists for it) and closes. */
function refuse(socket: Duplex, reply: Reply): void {
  const body = 'body' in reply ? reply.body : ''
  const headers: Record<string, string> = { ...reply.headers, 'content-length': String(Buffer.byteLength(body)), connection: 'close' }
  let head = `HTTP/1.1 ${reply.status} ${STATUS_CODES[reply.status] ?? ''}\r\n`
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`
  socket.end(`${head}\r\n${body}`)
}

async function serve(handler: Handler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const reply = await handler.handle(exchangeOf(req))
  // The answer goes out once the request is read to its end (see discardBody); past the cap, it goes and the connection is cut.
  if (!req.complete && !(await discardBody(req))) {
    res.shouldKeepAlive = false
    res.on('finish', () => req.socket.destroy())
  }
  if ('body' in reply) {
    if (reply.status !== 204) reply.headers['content-length'] = String(Buffer.byteLength(reply.body))
    res.writeHead(reply.status, reply.headers)
    res.end(reply.status === 204 ? undefined : reply.body)
    return
  }
  res.writeHead(reply.status, reply.headers)
  res.flushHeaders()
  req.socket.setNoDelay(true)
  const stop = reply.stream({
    write(chunk) {
      if (res.destroyed || res.writableEnded) return false
      const room = res.write(chunk)
      // Too far behind: cut off (it resumes from its last revision).
      if (res.writableLength > MAX_BUFFERED) res.destroy()
      return room
    },
    drain(fn) {
      if (res.destroyed || !res.writableNeedDrain) queueMicrotask(fn)
      else res.once('drain', fn)
    },
    end() {
      if (!res.writableEnded) res.end()
    },
  })
  res.on('close', stop)
}

/**
 * Reads and drops what is left of a request's body (one answered without
 * reading it: over the limit, unauthorized, no such route), so that the
 * answer goes out only once the client has sent everything. A node that
 * answers and closes while the client is still sending makes its TCP stack
 * reset the connection, and the reset can reach the client before it reads
 * the answer (RFC 9112, 9.6): it saw a reset instead of its 413. Resolves
 * false past {@link MAX_DRAIN} bytes (reading stops there) or if the client
 * went away.
 */
function discardBody(req: IncomingMessage): Promise<boolean> {
  const declared = Number(req.headers['content-length'] ?? 0)
  if (declared > MAX_DRAIN) return Promise.resolve(false)
  return new Promise((resolve) => {
    let dropped = 0
    const onData = (chunk: Buffer) => {
      dropped += chunk.length
      if (dropped > MAX_DRAIN) done(false)
    }
    const onEnd = () => done(true)
    const onClose = () => done(req.complete)
    const done = (ok: boolean) => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('close', onClose)
      if (!ok) req.pause()
      resolve(ok)
    }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('close', onClose)
    req.resume()
  })
}

/** Decodes request bodies; `ignoreBOM` keeps a leading BOM, which JSON.parse then refuses, as before. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** Reads the body up to `limit` bytes; past it, rejects at once and stops buffering (the rest is dropped before the answer, see discardBody). */
function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? NaN)
  if (declared > limit) return Promise.reject(tooLarge(limit))
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        cleanup()
        req.pause()
        reject(tooLarge(limit))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      // Strict: invalid UTF-8 is refused, not replaced with U+FFFD (which would write a key the client never sent).
      try {
        resolve(UTF8.decode(Buffer.concat(chunks)))
      } catch {
        reject(new InvalidArgumentError('body: not valid UTF-8'))
      }
    }
    const onError = (err: Error) => {
      cleanup()
      reject(err)
    }
    const cleanup = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
    }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
  })
}
