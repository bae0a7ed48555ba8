/**
 * The Node transport: `node:http` / `node:https` with a keep-alive agent,
 * and `get`, `list` and `commit` as frames over one persistent connection
 * per node (`./framed-transport`) wherever the node accepts the upgrade.
 * The modules are imported at run time by a name bundlers do not follow, so
 * this file can sit in a browser bundle without pulling Node built-ins in;
 * the adapter only loads it where {@link hasNodeHttp} holds.
 *
 * Pooled idle sockets do not keep the process alive (Node's agent unrefs
 * them, the framed connection unrefs itself when idle), so a process that
 * holds and watches nothing exits on its own.
 *
 * @module
 */
import type * as Http from 'node:http'
import type * as Https from 'node:https'
import { Frames } from './framed-transport'
import type { Transport, TransportRequest, TransportResponse } from './transport'

/** Options of {@link nodeTransport}. */
export interface NodeTransportOptions {
  /** Send `get`, `list` and `commit` as frames of one persistent connection (default true); false: plain HTTP only. */
  frames?: boolean
}

/**
 * Creates the Node transport.
 *
 * @example
 * const adapter = httpAdapter({ endpoints, namespace: 'demo', transport: await nodeTransport() })
 */
export async function nodeTransport(options: NodeTransportOptions = {}): Promise<Transport> {
  const load = (name: string) => import(/* @vite-ignore */ name)
  const http = (await load('node:http')) as typeof Http
  let https: typeof Https | undefined
  const agent = new http.Agent({ keepAlive: true, scheduling: 'lifo' })
  let secureAgent: Https.Agent | undefined
  const frames =
    options.frames === false
      ? undefined
      : new Frames({ http, https: async () => (https ??= (await load('node:https')) as typeof Https) })
  return {
    name: frames ? 'node:http+frames' : 'node:http',
    deadlines: true,
    send(r) {
      // A framed answer in one hop; over HTTP when the frames decline.
      return frames ? frames.send(r).then((framed) => framed ?? overHttp(r)) : overHttp(r)
    },
    close() {
      frames?.close()
      agent.destroy()
      secureAgent?.destroy()
    },
  }

  async function overHttp(r: TransportRequest): Promise<TransportResponse> {
    // Over HTTP the deadline is a signal of its own (AbortSignal.timeout does not keep the process alive).
    if (r.deadline !== undefined) r = { ...r, signal: AbortSignal.any([r.signal, AbortSignal.timeout(Math.max(0, Math.ceil(r.deadline - performance.now())))]) }
    const secure = r.url.startsWith('https:')
    if (secure && !secureAgent) {
      https ??= (await load('node:https')) as typeof Https
      secureAgent = new https.Agent({ keepAlive: true, scheduling: 'lifo' })
    }
    const headers: Record<string, string> = { ...r.headers }
    if (r.body !== undefined) headers['content-length'] = String(Buffer.byteLength(r.body))
    return new Promise<TransportResponse>((resolve, reject) => {
      const options = { method: r.method, headers, signal: r.signal }
      const req = secure
        ? https!.request(r.url, { ...options, agent: secureAgent })
        : http.request(r.url, { ...options, agent })
      req.on('error', reject)
      req.on('response', (res) => {
        res.on('error', () => {}) // surfaced by the reader
        resolve({
          status: res.statusCode ?? 0,
          text: () =>
            new Promise<string>((done, fail) => {
              const chunks: Buffer[] = []
              res.on('data', (c: Buffer) => chunks.push(c))
              res.on('end', () => done(Buffer.concat(chunks).toString('utf8')))
              res.on('error', fail)
              res.on('aborted', () => fail(new Error('the response was cut off')))
            }),
          chunks: () => res as AsyncIterable<Uint8Array>,
          pipe: (onChunk) =>
            new Promise<void>((done, fail) => {
              res.on('data', (c: Buffer) => {
                try {
                  onChunk(c)
                } catch (err) {
                  fail(err)
                  res.destroy()
                }
              })
              res.on('end', done)
              res.on('error', fail)
              res.on('aborted', () => fail(new Error('the response was cut off')))
              // After `end` this changes nothing; before it (cancelled, destroyed) the body is over.
              res.on('close', () => fail(new Error('the response was closed')))
            }),
          cancel: () => res.destroy(),
          ref: (on) => {
            if (on) res.socket?.ref()
            else res.socket?.unref()
          },
        })
      })
      req.end(r.body)
    })
  }
}
