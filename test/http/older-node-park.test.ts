/**
 * A client whose acquires park their take (`waitChange`) against a node
 * older than waiting commits. No older node can be started from this tree,
 * so the older node is a fake, and the test names say so: a real
 * `zaris serve` process behind a small HTTP proxy that answers as the older
 * node did where it differs, and forwards everything else (no frames, so
 * every request passes the proxy).
 *
 * - `refuses`: the older node's commit schema was strict, so `waitChange`
 *   got `400 INVALID_ARGUMENT` "body: Unrecognized key: \"waitChange\"" (the
 *   message zod gives, checked below). The client sends that commit again
 *   without it, and never sends the field again.
 * - `ignores`: a node that drops the field and answers at once. The take's
 *   answer shows nothing changed, and the waiter watches for that round.
 *
 * Either way: the handover happens, and a waiter does not spin (no commits
 * while the holder holds).
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http'
import { z } from 'zod'
import { afterAll, describe, expect, test } from 'vitest'
import { connect, type Client } from 'zaris'
import { startNode, type NodeProcess } from '../server/node-process'

const cleanup: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {})
})

const issue = z.strictObject({ checks: z.array(z.unknown()) }).safeParse({ checks: [], waitChange: 1 }).error!.issues[0]!
const REFUSAL = { error: { code: 'INVALID_ARGUMENT', message: `body: ${issue.message}` } }

interface OlderNode {
  url: string
  /** Every commit that came: whether it carried waitChange. */
  commits: Array<{ waitChange: boolean }>
}

async function olderNode(port: number, mode: 'refuses' | 'ignores'): Promise<OlderNode> {
  const seen: OlderNode = { url: '', commits: [] }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      let body = Buffer.concat(chunks)
      if (req.url!.endsWith('/commit')) {
        const json = JSON.parse(body.toString('utf8')) as Record<string, unknown>
        const waits = Object.hasOwn(json, 'waitChange')
        seen.commits.push({ waitChange: waits })
        if (waits && mode === 'refuses') {
          res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify(REFUSAL))
          return
        }
        delete json.waitChange
        body = Buffer.from(JSON.stringify(json))
      }
      const headers = { ...req.headers, host: `127.0.0.1:${port}`, 'content-length': String(body.length) }
      const upstream = request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers }, (answer: IncomingMessage) => {
        res.writeHead(answer.statusCode!, answer.headers)
        answer.pipe(res)
      })
      upstream.on('error', () => res.destroy())
      res.on('close', () => upstream.destroy())
      upstream.end(body)
    })
  })
  // No frames on the older node: the client sends its requests over HTTP, through the proxy.
  server.on('upgrade', (_req, socket) => socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n'))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  cleanup.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))))
  seen.url = `127.0.0.1:${(server.address() as { port: number }).port}`
  return seen
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('a node older than waiting commits (a fake: a real node behind a proxy that answers as the older one did)', () => {
  test('zod words the refusal as the older node sent it', () => {
    expect(REFUSAL.error.message).toBe('body: Unrecognized key: "waitChange"')
  })

  for (const mode of ['refuses', 'ignores'] as const) {
    test(`a fake older node that ${mode} waitChange: the lock is handed over, and the waiter sends no commit while it waits`, async () => {
      const n: NodeProcess = await startNode(['--insecure'])
      cleanup.push(() => n.stop())
      const older = await olderNode(n.port, mode)
      const ns = `older-park-${mode}`
      const holder: Client = await connect(`zaris://127.0.0.1:${n.port}/${ns}`)
      const waiter: Client = await connect(`zaris://${older.url}/${ns}`)
      cleanup.push(() => holder.close(), () => waiter.close())
      for (let round = 0; round < 2; round++) {
        const held = (await holder.locks.acquire('lock:x', { ttl: 20_000 }))!
        const waiting = waiter.locks.acquire('lock:x', { ttl: 20_000, wait: 15_000 })
        // Its opening commits (a try, its place in line, its take, resent once refused) go through the
        // proxy first: under load that takes more than a fixed pause, so wait until none came for 300 ms.
        for (let n = -1; n !== older.commits.length; await sleep(300)) n = older.commits.length
        const before = older.commits.length
        await sleep(1_000)
        // No spin: a second without a single commit from the waiter.
        expect(older.commits.length).toBe(before)
        await held.release()
        const got = (await waiting)!
        expect(got).not.toBeNull()
        expect((await holder.locks.holder('lock:x'))?.owner).toBe(waiter.id)
        await got.release()
      }
      const asked = older.commits.filter((c) => c.waitChange).length
      // Refused once, then never sent again; ignored, it is sent once per wait (and costs one commit each).
      if (mode === 'refuses') expect(asked).toBe(1)
      else expect(asked).toBe(2)
      expect(waiter.adapter.capabilities?.commitOnChange ?? false).toBe(mode === 'ignores')
    }, 40_000)
  }
})
