/**
 * A client that filters its watch stream against a node older than
 * filtered streams. No older node can be started from this tree, so the
 * older node is a fake, and the test names say so: a real `zaris serve`
 * process behind a small HTTP proxy that answers as the older node did
 * where it differs, and forwards everything else.
 *
 * - `refuses`: the older node's watch query schema was strict, so
 *   `prefixes` got `400 INVALID_ARGUMENT` "query: Unrecognized key:
 *   \"prefixes\"" (the message zod gives, checked below); it had no
 *   `filter` route and no frames (the upgrade is answered 404).
 * - `ignores`: a node that opens the stream but does not filter (no stream
 *   id in its `ready`), so the stream carries the whole namespace.
 *
 * Either way the client must fall back to the whole namespace: every watch
 * gets exactly its own changes, no error, and no `filter` request is sent.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http'
import { z } from 'zod'
import { afterAll, describe, expect, test } from 'vitest'
import type { WatchEvent } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { startNode, type NodeProcess } from '../server/node-process'

const cleanup: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {})
})

// What the older node's strict query schema said of `prefixes` (parseWith names the query when the issue has no path).
const issue = z.strictObject({ prefix: z.string() }).safeParse({ prefix: '', prefixes: '[]' }).error!.issues[0]!
const REFUSAL = { error: { code: 'INVALID_ARGUMENT', message: `query: ${issue.message}` } }

interface OlderNode {
  url: string
  /** The query of every watch request that came, and what the fake did with it. */
  watches: Array<{ query: string; refused: boolean }>
  /** Requests to routes the older node did not have (`filter`). */
  unknown: string[]
}

/** A fake older node in front of the real node at `port`: `refuses` or `ignores` the watch query's `prefixes`. */
async function olderNode(port: number, mode: 'refuses' | 'ignores'): Promise<OlderNode> {
  const seen: OlderNode = { url: '', watches: [], unknown: [] }
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x')
    if (url.pathname.endsWith('/filter')) {
      seen.unknown.push(url.pathname)
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'INVALID_ARGUMENT', message: 'no such route' } }))
      return
    }
    if (url.pathname.endsWith('/watch')) {
      const refused = mode === 'refuses' && url.searchParams.has('prefixes')
      seen.watches.push({ query: url.search, refused })
      if (refused) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify(REFUSAL))
        return
      }
      url.searchParams.delete('prefixes')
    }
    const headers = { ...req.headers, host: `127.0.0.1:${port}` }
    const upstream = request({ host: '127.0.0.1', port, method: req.method, path: url.pathname + url.search, headers }, (answer: IncomingMessage) => {
      res.writeHead(answer.statusCode!, answer.headers)
      answer.pipe(res)
    })
    upstream.on('error', () => res.destroy())
    res.on('close', () => upstream.destroy())
    req.pipe(upstream)
  })
  // No frames on the older node: the client then sends its requests over HTTP.
  server.on('upgrade', (_req, socket) => socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n'))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  cleanup.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))))
  seen.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  return seen
}

async function node(): Promise<NodeProcess> {
  const n = await startNode(['--insecure'])
  cleanup.push(() => n.stop())
  return n
}

async function until(cond: () => boolean, what: string, timeout = 15_000): Promise<void> {
  const deadline = Date.now() + timeout
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeout} ms: ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe('a node older than filtered streams (a fake: a real node behind a proxy that answers as the older one did)', () => {
  test('zod still words the refusal as the older node sent it', () => {
    expect(REFUSAL.error.message).toBe('query: Unrecognized key: "prefixes"')
  })

  for (const mode of ['refuses', 'ignores'] as const) {
    test(`a fake older node that ${mode} prefixes: the client falls back to the whole namespace, and every watch gets its own changes`, async () => {
      const n = await node()
      const older = await olderNode(n.port, mode)
      const ns = `older-${mode}`
      const writer = httpAdapter({ endpoints: [n.url], namespace: ns })
      const watcher = httpAdapter({ endpoints: [older.url], namespace: ns })
      const got: Record<string, string[]> = { 'a/': [], 'b/': [] }
      const errors: Error[] = []
      const sink = (p: string) => ({ event: (ev: WatchEvent) => void got[p]!.push(`${ev.key}=${String(ev.value)}`), error: (err: Error) => void errors.push(err) })
      const unA = await watcher.watch('a/', sink('a/'))
      const first = await writer.commit([], [{ type: 'set', key: 'a/1', value: 1 }, { type: 'set', key: 'b/1', value: 1 }, { type: 'set', key: 'c/1', value: 1 }])
      if (!first.ok) throw new Error('commit failed')
      await until(() => got['a/']!.length === 1, 'a/1')
      // A second watch while the stream runs: with a filtering node this is a `filter` request.
      const unB = await watcher.watch('b/', sink('b/'), first.revision)
      await writer.commit([], [{ type: 'set', key: 'b/2', value: 2 }, { type: 'set', key: 'c/2', value: 2 }, { type: 'set', key: 'a/2', value: 2 }])
      await until(() => got['a/']!.length === 2 && got['b/']!.length === 1, 'a/2 and b/2')
      expect(got).toEqual({ 'a/': ['a/1=1', 'a/2=2'], 'b/': ['b/2=2'] })
      expect(errors).toEqual([])
      // One stream for both watches: asked with prefixes first, then (refused) for the whole namespace.
      const filtered = older.watches.filter((w) => w.query.includes('prefixes='))
      expect(filtered.length).toBeGreaterThan(0)
      if (mode === 'refuses') {
        expect(older.watches.map((w) => w.refused)).toEqual([true, false])
        expect(older.watches[1]!.query).toBe('?prefix=')
      } else expect(older.watches).toHaveLength(1)
      expect(older.unknown).toEqual([])
      unA()
      unB()
      await Promise.all([writer.close(), watcher.close()])
    }, 30_000)
  }
})
