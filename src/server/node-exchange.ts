/**
 * One HTTP exchange on Node's http module, in the handler's terms: the
 * request as an {@link Exchange} (its body read up to the handler's limit
 * and no further), and the {@link Reply} written back, a stream with the
 * connection's output limits applied on every write.
 *
 * @module
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import { InvalidArgumentError, UnavailableError } from '../core/contract/errors'
import type { Connections } from './connections'
import type { Handler } from './handler'
import type { InputBudget } from './input-budget'
import { ParkConnection } from './parking'
import { tooLarge, type Exchange, type Reply } from './reply'

/** The parking side of each socket, made on its first waiting commit (the handler asks for `connection` only then) and closed with it. */
const connections = new WeakMap<object, ParkConnection>()

function connectionOf(socket: Duplex): ParkConnection {
  let c = connections.get(socket)
  if (!c) {
    const made = (c = new ParkConnection())
    connections.set(socket, made)
    // The peer's end of sending (a half-open socket stays up for the answer) drops them too: they are answered then.
    socket.once('end', () => made.close())
    socket.once('close', () => made.close())
  }
  return c
}

/** Bytes of a refused body read and dropped before the answer; past this the connection is cut. */
const MAX_DRAIN = 4 * 1024 * 1024

/** Serves one request: the handler's reply, once the request is read to its end. Its body counts against `budget` meanwhile. */
export async function serve(handler: Handler, req: IncomingMessage, res: ServerResponse, connections: Connections, budget: InputBudget): Promise<void> {
  let held = 0
  const reserve = (bytes: number) => {
    if (!budget.tryTake(bytes)) {
      throw new UnavailableError(`this node is reading too many requests at once (${budget.maxBytes} bytes; zaris serve --max-input-bytes); try again`)
    }
    held += bytes
  }
  let reply: Reply
  try {
    reply = connections.refused(req.socket) ? refusal(connections) : await handler.handle(exchangeOf(req, reserve))
  } finally {
    budget.give(held)
  }
  // The answer goes out once the request is read to its end (see discardBody); past the cap, it goes and the connection is cut.
  if (!req.complete && !(await discardBody(req))) {
    res.shouldKeepAlive = false
    res.on('finish', () => req.socket.destroy())
  }
  if (connections.refused(req.socket)) res.shouldKeepAlive = false
  if ('body' in reply) {
    if (reply.status !== 204) reply.headers['content-length'] = String(Buffer.byteLength(reply.body))
    res.writeHead(reply.status, reply.headers)
    res.end(reply.status === 204 ? undefined : reply.body)
    connections.checkHard(req.socket)
    return
  }
  res.writeHead(reply.status, reply.headers)
  res.flushHeaders()
  req.socket.setNoDelay(true)
  const stop = reply.stream({
    write(chunk) {
      if (res.destroyed || res.writableEnded) return false
      const room = res.write(chunk)
      // Too far behind: cut off now (it resumes from its last revision); the other limits are swept.
      return !connections.checkHard(req.socket) && room
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

/** The answer to a request on a connection past the node's limit. */
function refusal(connections: Connections): Reply {
  const { status, body } = connections.refusal()
  return { status, headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1', connection: 'close' }, body }
}

/** Answers a refused upgrade on the raw socket (no ServerResponse exists for it) and closes. */
export function refuseUpgrade(socket: Duplex, reply: Reply): void {
  const body = 'body' in reply ? reply.body : ''
  const headers: Record<string, string> = { ...reply.headers, 'content-length': String(Buffer.byteLength(body)), connection: 'close' }
  let head = `HTTP/1.1 ${reply.status} ${STATUS_CODES[reply.status] ?? ''}\r\n`
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`
  socket.end(`${head}\r\n${body}`)
}

export function exchangeOf(req: IncomingMessage, reserve: (bytes: number) => void = () => {}): Exchange {
  return {
    method: req.method ?? 'GET',
    // The Host header is not trusted to build URLs; only the path and query are used.
    url: new URL(req.url ?? '/', 'http://zaris.invalid'),
    header: (name) => {
      const v = req.headers[name]
      return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v
    },
    body: (limit) => readBody(req, limit, reserve),
    get connection() {
      return connectionOf(req.socket)
    },
  }
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
function readBody(req: IncomingMessage, limit: number, reserve: (bytes: number) => void): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? NaN)
  if (declared > limit) return Promise.reject(tooLarge(limit))
  try {
    // What it will hold: the declared size, or the limit for a body that did not say.
    reserve(Number.isFinite(declared) ? declared : limit)
  } catch (err) {
    return Promise.reject(err)
  }
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
