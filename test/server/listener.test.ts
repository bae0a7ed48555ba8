/**
 * The Node listener against misbehaving clients on raw sockets: headers or
 * bodies sent too slowly are cut off, and the node keeps serving others.
 */
import { connect as tcp } from 'node:net'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { createHandler, listen, memoryBackend, type Listening } from 'zaris/server'

const backend = memoryBackend()
let node: Listening
beforeAll(async () => {
  node = await listen(createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf }), { port: 0, headersTimeoutMs: 500, requestTimeoutMs: 1_000 })
})
afterAll(async () => {
  await node.close()
  await backend.close()
})

/** Writes `first` on a raw connection, then nothing; resolves what came back and when the node hung up. */
function stall(first: string): Promise<{ answer: string; after: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const socket = tcp(node.port, '127.0.0.1', () => socket.write(first))
    let answer = ''
    socket.on('data', (d) => (answer += d))
    socket.on('error', reject)
    socket.on('close', () => resolve({ answer, after: performance.now() - started }))
  })
}

test('a client that never finishes its headers is cut off', async () => {
  const { answer, after } = await stall('POST /v1/a/get HTTP/1.1\r\nHost: 127.0.0.1\r\n')
  expect(answer).toMatch(/^HTTP\/1\.1 408/)
  console.log(`[figure] slow headers cut off after ${after.toFixed(0)} ms (headersTimeoutMs 500)`)
  expect(after).toBeLessThan(10_000)
})

test('a client that never finishes its body is cut off, and others are served meanwhile', async () => {
  const slow = stall('POST /v1/a/get HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"key":')
  const ok = await fetch(`${node.url}/v1/a/get`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"key":"k"}' })
  expect(await ok.json()).toEqual({ entry: null })
  const { answer } = await slow
  expect(answer).toMatch(/^HTTP\/1\.1 408/)
})

test('a watch stream outlives the request timeout (it only bounds receiving the request)', async () => {
  const { Client } = await import('zaris')
  const { httpAdapter } = await import('zaris/http')
  const client = new Client(httpAdapter({ endpoints: [node.url], namespace: 'long' }))
  const watch = client.watch('k')
  await watch.ready
  await new Promise((r) => setTimeout(r, 2_500))
  await client.put('k', 'late')
  expect((await watch.next()).value).toMatchObject({ key: 'k', value: 'late', revision: 1 })
  // One stream all along, not a reconnect.
  const metrics = await (await fetch(`${node.url}/metrics`)).text()
  expect(metrics).toContain('zaris_requests_total{route="watch",status="200"} 1\n')
  await client.close()
})

/**
 * Sends a request whose body is over the limit in slices, `gapMs` apart, on
 * a raw connection, and reads the answer once everything is sent. Resolves
 * the answer and the first write error, if any.
 */
function slowHugeBody(path: string, headers: string, bodyBytes: number, gapMs: number): Promise<{ answer: string; writeError: string | undefined; sent: number }> {
  return new Promise((resolve) => {
    const body = Buffer.from(`{"key":"${'k'.repeat(bodyBytes)}"}`)
    // Half-open allowed: a client sending a body keeps sending after the node's FIN, as an HTTP client does.
    const socket = tcp({ port: node.port, host: '127.0.0.1', allowHalfOpen: true })
    let answer = ''
    let writeError: string | undefined
    let sent = 0
    socket.on('data', (d) => (answer += d))
    socket.on('error', (e: NodeJS.ErrnoException) => (writeError ??= `${e.code} (${e.syscall})`))
    socket.on('close', () => resolve({ answer, writeError, sent }))
    socket.on('connect', async () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${headers}Connection: close\r\n\r\n`)
      // The node answers after the headers: the slices after that go to a connection it has already answered.
      for (let at = 0; at < body.length && !socket.destroyed; at += 64 * 1024) {
        await new Promise((r) => setTimeout(r, gapMs))
        socket.write(body.subarray(at, at + 64 * 1024), (err) => {
          if (!err) sent += Math.min(64 * 1024, body.length - at)
        })
      }
      socket.end()
    })
  })
}

test('a body over the limit, still being sent when the node refuses it, is read to its end: no reset, the client reads the 413', async () => {
  // A client that is still sending when the node closes gets a TCP reset (RFC 9112 9.6), which can
  // reach it before it reads the answer: the node must read (and drop) the rest of the body first.
  for (const [path, headers, status] of [
    ['/v1/a/commit', '', 413],
    ['/v1/a/get', 'Authorization: Bearer wrong\r\n', 413],
    ['/v1/a/nowhere', '', 404],
  ] as const) {
    const { answer, writeError, sent } = await slowHugeBody(path, headers, 600 * 1024, 20)
    expect(writeError, `${path}: a write failed after ${sent} bytes`).toBeUndefined()
    expect(sent).toBeGreaterThan(600 * 1024)
    expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status}`))
  }
})
