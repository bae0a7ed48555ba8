/**
 * A fake node for the HTTP client's tests, and the tests name it so: a
 * small HTTP server in front of a real node (over real HTTP) that answers
 * a request itself where `answer` says, and forwards everything else. It
 * declines frames (the upgrade is answered 404), so every request passes
 * it as plain HTTP and can be seen.
 */
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import { afterAll, beforeAll } from 'vitest'
import { createHandler, listen, memoryBackend } from 'zaris/server'

/** A real node (memory) served in this process for one test file; `url` and `port` are set once its `beforeAll` ran. */
export interface FileNode {
  url: string
  port: number
  /** Runs these when the file ends, before the node closes (last given, first run). */
  later(...close: Array<() => Promise<unknown>>): void
}

/** Serves a real node in this process on a free port for the test file that calls it (at its top level). */
export function nodeForFile(token?: string): FileNode {
  const cleanup: Array<() => Promise<unknown>> = []
  const node: FileNode = { url: '', port: 0, later: (...close) => cleanup.push(...close) }
  beforeAll(async () => {
    const backend = memoryBackend()
    const served = await listen(createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf, token, log: () => {} }), { port: 0 })
    node.url = served.url
    node.port = Number(new URL(served.url).port)
    node.later(() => served.close().then(() => backend.close()))
  })
  afterAll(async () => {
    for (const close of cleanup.reverse()) await close().catch(() => {})
  })
  return node
}

/** A request as the front saw it: its method, path and query, and its JSON body (a POST's). */
export interface Seen {
  method: string
  path: string
  body: Record<string, unknown> | undefined
  headers: IncomingHttpHeaders
}

/** What the front answers itself: a status and a JSON body (or `text`, sent as it is). */
export interface Answer {
  status: number
  json?: unknown
  text?: string
}

export interface FrontNode {
  url: string
  /** Every request that came, in order. */
  seen: Seen[]
  /** Upgrade requests (frames asked for) that came. */
  upgrades: number
  /** Cuts every watch stream open through it (the client sees its stream break). */
  cutWatches(): void
  /** How many watch streams are open through it. */
  openWatches(): number
  /** Writes `text` (whole server-sent events) into every watch stream open through it, as if the node had sent it. */
  say(text: string): void
  close(): Promise<void>
}

/** A front for the node at `targetPort`: `answer` gives what to answer a request with, `'hang'` for nothing ever, or undefined to forward it. */
export async function frontNode(targetPort: number, answer: (seen: Seen) => Answer | 'hang' | undefined = () => undefined): Promise<FrontNode> {
  const watches = new Set<ServerResponse>()
  const front: FrontNode = {
    url: '',
    seen: [],
    upgrades: 0,
    cutWatches: () => watches.forEach((res) => res.destroy()),
    openWatches: () => watches.size,
    say: (text) => watches.forEach((res) => res.write(text)),
    close: async () => {},
  }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const raw = Buffer.concat(chunks)
      const body = raw.length > 0 ? (JSON.parse(raw.toString('utf8')) as Record<string, unknown>) : undefined
      const seen: Seen = { method: req.method!, path: req.url!, body, headers: req.headers }
      front.seen.push(seen)
      const own = answer(seen)
      if (own === 'hang') return
      if (own) {
        res.writeHead(own.status, { 'content-type': own.text === undefined ? 'application/json' : 'text/plain' }).end(own.text ?? JSON.stringify(own.json))
        return
      }
      if (req.url!.includes('/watch')) {
        watches.add(res)
        res.on('close', () => watches.delete(res))
      }
      const upstream = request({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers }, (up: IncomingMessage) => {
        res.writeHead(up.statusCode!, up.headers)
        up.pipe(res)
      })
      upstream.on('error', () => res.destroy())
      res.on('close', () => upstream.destroy())
      upstream.end(raw)
    })
  })
  server.on('upgrade', (_req, socket) => {
    front.upgrades++
    socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  front.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  front.close = () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r())))
  return front
}
