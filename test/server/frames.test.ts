/**
 * The node's framed connections, spoken by hand over TCP: the upgrade is
 * checked like any request (token, Host, path), frames go through the same
 * validation, replay cache and metrics as the POSTs, bad frames are
 * answered or the connection closed, the node keeps serving, and closing
 * the node ends the connections.
 */
import { afterEach, describe, expect, test } from 'vitest'
import { createHandler, listen, loopbackHosts, memoryBackend, type HandlerOptions, type Listening } from 'zaris/server'
import { frameSocket, type FrameSocket } from './frame-socket'

const TOKEN = 'frames-secret-1'
const cleanup: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

async function serve(extra: Partial<HandlerOptions> = {}): Promise<{ node: Listening; metrics: () => string }> {
  const backend = memoryBackend()
  const handler = createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf, log: () => {}, ...extra })
  const node = await listen(handler, { port: 0 })
  cleanup.push(async () => {
    await node.close()
    await backend.close()
  })
  return { node, metrics: () => handler.metrics.render({ watchers: 0, locksHeld: 0, namespaces: 0 }) }
}

async function open(port: number, headers: Record<string, string> = {}, path?: string): Promise<FrameSocket> {
  const s = await frameSocket(port, headers, path)
  cleanup.push(() => void s.socket.destroy())
  return s
}

const frame = (id: number, path: string, body: unknown) => `${JSON.stringify({ id, path, body })}\n`

async function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

describe('the upgrade', () => {
  test('answers 101 and then get, list and commit frames, the same answers as the POSTs', async () => {
    const { node } = await serve()
    const s = await open(node.port)
    expect(s.status).toBe(101)
    expect(s.head).toMatch(/^upgrade: zaris-frames\/1$/im)
    s.write(frame(1, '/v1/a/commit', { checks: [{ key: 'k', revision: null }], ops: [{ type: 'set', key: 'k', value: { n: 1 } }] }))
    const committed = await s.next()
    expect(committed).toMatchObject({ id: 1, status: 200, body: { ok: true, revision: 1 } })
    s.write(frame(2, '/v1/a/get', { key: 'k' }))
    const got = await s.next()
    expect(got).toMatchObject({ id: 2, status: 200 })
    expect(got.body).toEqual((await post(node.url, '/v1/a/get', { key: 'k' })).body)
    s.write(frame(3, '/v1/a/list', { prefix: '' }))
    expect((await s.next()).body.entries).toHaveLength(1)
    // The namespace is per frame: one connection serves several.
    s.write(frame(4, '/v1/b/get', { key: 'k' }))
    expect(await s.next()).toEqual({ id: 4, status: 200, body: { entry: null } })
  })

  test('with --token: refused with 401 without it or with a wrong one, accepted with it', async () => {
    const { node } = await serve({ token: TOKEN })
    const none = await open(node.port)
    expect(none.status).toBe(401)
    expect(JSON.parse(none.refusal).error.code).toBe('UNAUTHORIZED')
    expect(none.head).toMatch(/^www-authenticate: Bearer$/im)
    expect((await open(node.port, { authorization: 'Bearer wrong-token-1' })).status).toBe(401)
    const ok = await open(node.port, { authorization: `Bearer ${TOKEN}` })
    expect(ok.status).toBe(101)
    ok.write(frame(1, '/v1/a/get', { key: 'k' }))
    expect(await ok.next()).toEqual({ id: 1, status: 200, body: { entry: null } })
  })

  test('a Host the node does not serve is refused (DNS rebinding), as for any request', async () => {
    const { node } = await serve({ hosts: [...loopbackHosts] })
    const s = await open(node.port, { host: 'evil.example:80' })
    expect(s.status).toBe(403)
    expect((await open(node.port)).status).toBe(101)
  })

  test('another path or another protocol is refused with an HTTP error', async () => {
    const { node } = await serve()
    expect((await open(node.port, {}, '/v1/a/get')).status).toBe(404)
    expect((await open(node.port, { upgrade: 'websocket' })).status).toBe(400)
    // The node is still there, over HTTP and over frames.
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200)
  })

  test('the upgrade and each frame show in the metrics under their routes', async () => {
    const { node, metrics } = await serve()
    const s = await open(node.port)
    s.write(frame(1, '/v1/a/commit', { checks: [], ops: [{ type: 'set', key: 'k', value: 1 }] }))
    s.write(frame(2, '/v1/a/get', { key: 'k' }))
    s.write(frame(3, '/v1/a/get', { key: 7 }))
    const answers = [await s.next(), await s.next(), await s.next()].sort((a, b) => a.id! - b.id!)
    expect(answers.map((a) => a.status)).toEqual([200, 200, 400])
    const text = metrics()
    expect(text).toContain('zaris_requests_total{route="frames",status="101"} 1\n')
    expect(text).toContain('zaris_requests_total{route="commit",status="200"} 1\n')
    expect(text).toContain('zaris_requests_total{route="get",status="200"} 1\n')
    expect(text).toContain('zaris_requests_total{route="get",status="400"} 1\n')
    expect(text).toMatch(/^zaris_commits_total 1$/m)
    void node
  })
})

describe('request ids over frames', () => {
  test('a commit sent again with its request id is answered with the first result, over frames or over HTTP', async () => {
    const { node, metrics } = await serve()
    const body = { checks: [{ key: 'lock', revision: null }], ops: [{ type: 'set', key: 'lock', value: 'me', ttl: 10_000, owner: 'me' }], requestId: 'frames-retry-0001' }
    const s = await open(node.port)
    s.write(frame(1, '/v1/ids/commit', body))
    const first = await s.next()
    expect(first.body).toMatchObject({ ok: true, revision: 1 })
    // The answer "lost": the same frame on a new connection.
    s.socket.destroy()
    const again = await open(node.port)
    again.write(frame(1, '/v1/ids/commit', body))
    expect((await again.next()).body).toEqual(first.body)
    // And the same id over HTTP: one replay cache for both.
    expect((await post(node.url, '/v1/ids/commit', body)).body).toEqual(first.body)
    expect(metrics()).toMatch(/^zaris_commit_replays_total 2$/m)
    expect((await post(node.url, '/v1/ids/get', { key: 'lock' })).body.entry.revision).toBe(1)
  })
})

describe('bad frames', () => {
  test('a frame with an id but a bad body, or naming watch, gets a 400 for that id and the connection goes on', async () => {
    const { node } = await serve()
    const s = await open(node.port)
    s.write(frame(1, '/v1/a/commit', { checks: [], ops: [{ type: 'set', key: '', value: 1 }] }))
    const bad = await s.next()
    expect(bad).toMatchObject({ id: 1, status: 400, body: { error: { code: 'INVALID_ARGUMENT' } } })
    expect(bad.body.error.message).toMatch(/^ops\.0\.key: /)
    s.write(frame(2, '/v1/a/watch', {}))
    expect(await s.next()).toMatchObject({ id: 2, status: 400 })
    s.write(frame(3, '/v1/no such ns!/get', { key: 'k' }))
    expect(await s.next()).toMatchObject({ id: 3, status: 400 })
    s.write(frame(4, '/v2/a/get', { key: 'k' }))
    expect(await s.next()).toMatchObject({ id: 4, status: 404 })
    s.write(frame(5, '/v1/a/get', { key: 'k', extra: 1 }))
    expect(await s.next()).toMatchObject({ id: 5, status: 400 })
    s.write(frame(6, '/v1/a/get', { key: 'k' }))
    expect(await s.next()).toEqual({ id: 6, status: 200, body: { entry: null } })
  })

  for (const [what, bytes] of [
    ['malformed JSON', Buffer.from('{"id":1,"path":\n')],
    ['a JSON array', Buffer.from('[1,2]\n')],
    ['no id', Buffer.from('{"path":"/v1/a/get","body":{"key":"k"}}\n')],
    ['a negative id', Buffer.from('{"id":-1,"path":"/v1/a/get","body":{"key":"k"}}\n')],
    ['invalid UTF-8', Buffer.concat([Buffer.from('{"id":1,"path":"/v1/a/get","body":{"key":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}\n')])],
  ] as const) {
    test(`${what}: answered with id null and the connection closed; the node serves on`, async () => {
      const { node } = await serve()
      const s = await open(node.port)
      s.write(bytes)
      const answer = await s.next()
      expect(answer.id).toBeNull()
      expect(answer.status).toBe(400)
      expect(answer.body.error.code).toBe('INVALID_ARGUMENT')
      await s.closed
      const other = await open(node.port)
      other.write(frame(1, '/v1/a/get', { key: 'k' }))
      expect((await other.next()).status).toBe(200)
    })
  }

  test('a frame over the limit: TOO_LARGE for its id, the rest skipped unbuffered, the connection goes on', async () => {
    const { node } = await serve({ maxBodyBytes: 1024 })
    const s = await open(node.port)
    const big = frame(7, '/v1/a/commit', { checks: [], ops: [{ type: 'set', key: 'k', value: 'x'.repeat(200_000) }] })
    // In pieces, as a slow sender would.
    for (let i = 0; i < big.length; i += 16_384) s.write(big.slice(i, i + 16_384))
    s.write(frame(8, '/v1/a/get', { key: 'k' }))
    expect(await s.next()).toMatchObject({ id: 7, status: 413, body: { error: { code: 'TOO_LARGE' } } })
    expect(await s.next()).toEqual({ id: 8, status: 200, body: { entry: null } })
  })

  test('an endless line without an id is cut off at the limit', async () => {
    const { node } = await serve({ maxBodyBytes: 1024 })
    const s = await open(node.port)
    s.write('x'.repeat(5_000))
    const answer = await s.next()
    expect(answer).toMatchObject({ id: null, status: 413 })
    await s.closed
  })

  test('an endless frame with an id is cut off once it has sent 4 MiB past the limit', async () => {
    const { node } = await serve({ maxBodyBytes: 1024 })
    const s = await open(node.port)
    s.write('{"id":9,"path":"/v1/a/get","body":"')
    const chunk = 'y'.repeat(256 * 1024)
    for (let i = 0; i < 20 && !s.isClosed(); i++) {
      s.write(chunk)
      await new Promise((r) => setTimeout(r, 5))
    }
    expect(await s.next()).toMatchObject({ id: null, status: 413 })
    await s.closed
  })
})

describe('backpressure and closing', () => {
  test('3 000 frames pipelined in one write (past the per-connection cap) are each answered once', async () => {
    const { node } = await serve()
    const s = await open(node.port)
    const n = 3_000
    let all = ''
    for (let i = 0; i < n; i++) all += i % 3 === 0 ? frame(i, '/v1/p/commit', { checks: [], ops: [{ type: 'set', key: `k${i % 50}`, value: i }] }) : frame(i, '/v1/p/get', { key: `k${i % 50}` })
    s.write(all)
    const seen = new Set<number>()
    for (let i = 0; i < n; i++) {
      const a = await s.next()
      expect(a.status).toBe(200)
      expect(seen.has(a.id!)).toBe(false)
      seen.add(a.id!)
    }
    expect(seen.size).toBe(n)
  })

  test('a client that sends but never reads stalls its own connection only: the node stops reading it', async () => {
    const { node, metrics } = await serve()
    for (let i = 0; i < 20; i++) await post(node.url, '/v1/bp/commit', { checks: [], ops: [{ type: 'set', key: `k${i}`, value: 'v'.repeat(1024) }] })
    const s = await open(node.port)
    s.socket.pause() // never read the answers (about 21 KiB each)
    const list = frame(0, '/v1/bp/list', { prefix: '' })
    let written = 0
    // Until our side buffers too (the node no longer takes the bytes), or 200 000 frames.
    while (written < 200_000 && s.socket.write(list)) written++
    await new Promise((r) => setTimeout(r, 500))
    const served = Number(/^zaris_requests_total\{route="list",status="200"\} (\d+)$/m.exec(metrics())?.[1] ?? 0)
    console.log(`[figure] never-reading client: ${written} frames written, ${served} answered`)
    // The node answered what it read before the unread answers piled up, and then stopped reading.
    expect(written).toBeGreaterThan(2_000)
    expect(served).toBeGreaterThan(0)
    expect(served).toBeLessThan(written / 2)
    // Others are served meanwhile.
    const other = await open(node.port)
    other.write(frame(1, '/v1/bp/get', { key: 'k1' }))
    expect((await other.next()).status).toBe(200)
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200)
  })

  test('closing the node ends its framed connections, and close() resolves', async () => {
    const { node } = await serve()
    const s = await open(node.port)
    s.write(frame(1, '/v1/a/get', { key: 'k' }))
    expect((await s.next()).status).toBe(200)
    let ended = false
    s.socket.once('end', () => (ended = true))
    await node.close()
    await s.closed
    expect(ended).toBe(true) // a clean end, not a reset
  })

  test('an idle framed connection outlives the request timeout (it only bounds receiving a request)', async () => {
    const backend = memoryBackend()
    const node = await listen(createHandler({ adapterFor: backend.adapterFor }), { port: 0, requestTimeoutMs: 500, headersTimeoutMs: 400 })
    cleanup.push(async () => {
      await node.close()
      await backend.close()
    })
    const s = await open(node.port)
    await new Promise((r) => setTimeout(r, 2_500))
    expect(s.isClosed()).toBe(false)
    s.write(frame(1, '/v1/a/get', { key: 'k' }))
    expect((await s.next()).status).toBe(200)
  })
})
