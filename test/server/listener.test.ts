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
