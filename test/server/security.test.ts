/**
 * Bad requests against a real node process started with --token and --cors:
 * each gets the right 4xx and a JSON error naming the problem, the node
 * stays up, and its data is unchanged.
 */
import { request as httpRequest } from 'node:http'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { connect, isZarisError } from 'zaris'
import { startNode, type NodeProcess } from './node-process'

const TOKEN = 'test-token-0123456789'
const ORIGIN = 'http://app.localhost:5173'
let node: NodeProcess

beforeAll(async () => {
  node = await startNode(['--cors', ORIGIN, '--max-watchers', '3', '--max-namespaces', '8'], { ZARIS_TOKEN: TOKEN })
})
afterAll(async () => {
  expect(await node?.stop()).toBe(0)
})

const auth = { authorization: `Bearer ${TOKEN}` }
const jsonHeaders = { ...auth, 'content-type': 'application/json' }

async function post(op: string, body: string, headers: Record<string, string> = jsonHeaders, ns = 'sec') {
  const res = await fetch(`${node.url}/v1/${ns}/${op}`, { method: 'POST', headers, body })
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, json: safeJson(text) }
}

function safeJson(text: string): { error?: { code: string; message: string } } & Record<string, unknown> {
  try {
    return JSON.parse(text)
  } catch {
    return {}
  }
}

/** The node's whole state of the namespace, to show that refused requests changed nothing. */
async function snapshot(): Promise<string> {
  const r = await post('list', JSON.stringify({ prefix: '' }))
  expect(r.status).toBe(200)
  return r.text.replace(/"ttl":[\d.]+/g, '"ttl":_')
}

describe('a node started with --token', () => {
  test('answers /healthz without the token, everything else needs it (401 with a JSON error)', async () => {
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200)
    for (const headers of [{ 'content-type': 'application/json' } as Record<string, string>, { 'content-type': 'application/json', authorization: 'Bearer wrong-token-0123456789' }, { 'content-type': 'application/json', authorization: TOKEN }]) {
      const r = await post('get', JSON.stringify({ key: 'k' }), headers)
      expect(r.status).toBe(401)
      expect(r.headers.get('www-authenticate')).toBe('Bearer')
      expect(r.json.error).toMatchObject({ code: 'UNAUTHORIZED' })
    }
    expect((await fetch(`${node.url}/metrics`)).status).toBe(401)
    expect((await fetch(`${node.url}/metrics`, { headers: auth })).status).toBe(200)
  })

  test('the client surfaces a wrong token as UnauthorizedError, and a right one works', async () => {
    const bad = await connect(`zaris://127.0.0.1:${node.port}/sec`, { token: 'wrong-token-0123456789' })
    await expect(bad.get('k')).rejects.toMatchObject({ code: 'UNAUTHORIZED' })
    await bad.close()
    const good = await connect(`zaris://127.0.0.1:${node.port}/sec`, { token: TOKEN })
    expect((await good.put('k', 1)).value).toBe(1)
    await good.close()
  })

  test('bad bodies get 4xx with the field named; the data stays as it was; the node stays up', async () => {
    await post('commit', JSON.stringify({ checks: [], ops: [{ type: 'set', key: 'keep', value: { a: 1 } }] }))
    const before = await snapshot()
    const cases: Array<[string, string, number, string | RegExp, Record<string, string>?]> = [
      ['malformed JSON', '{"checks": [', 400, /malformed JSON/],
      ['NaN', '{"checks":[],"ops":[{"type":"set","key":"k","value":NaN}]}', 400, /malformed JSON/],
      ['a number as key', JSON.stringify({ key: 5 }), 400, /^key:/],
      ['an empty key', JSON.stringify({ checks: [], ops: [{ type: 'set', key: '', value: 1 }] }), 400, /^ops\.0\.key:/],
      ['an infinite ttl', '{"checks":[],"ops":[{"type":"set","key":"k","value":1,"ttl":1e999}]}', 400, /^ops\.0\.ttl:/],
      ['a negative ttl', JSON.stringify({ checks: [], ops: [{ type: 'set', key: 'k', value: 1, ttl: -5 }] }), 400, /^ops\.0\.ttl:/],
      ['a ttl past 2^31-1', JSON.stringify({ checks: [], ops: [{ type: 'set', key: 'k', value: 1, ttl: 2 ** 31 }] }), 400, /^ops\.0\.ttl:/],
      ['a string ttl', JSON.stringify({ checks: [], ops: [{ type: 'set', key: 'k', value: 1, ttl: '100' }] }), 400, /^ops\.0\.ttl:/],
      ['an unknown op', JSON.stringify({ checks: [], ops: [{ type: 'increment', key: 'k' }] }), 400, /^ops\.0\.type:/],
      ['an unknown field', JSON.stringify({ checks: [], ops: [], admin: true }), 400, /admin/],
      ['a check with both revision and created', JSON.stringify({ checks: [{ key: 'k', revision: 1, created: 1 }], ops: [] }), 400, /^checks\.0:/],
      ['a fractional revision', JSON.stringify({ checks: [{ key: 'k', revision: 1.5 }], ops: [] }), 400, /^checks\.0\.revision:/],
      ['the same key twice', JSON.stringify({ checks: [], ops: [{ type: 'delete', key: 'k' }, { type: 'delete', key: 'k' }] }), 400, /appears twice/],
      ['a body that is not an object', '[1,2]', 400, /body|expected object/],
      ['a bad request id', JSON.stringify({ checks: [], ops: [], requestId: '../../x' }), 400, /^requestId:/],
      ['text/plain', JSON.stringify({ checks: [], ops: [] }), 415, /content-type/, { ...auth, 'content-type': 'text/plain' }],
      ['a body over 64 KiB', JSON.stringify({ checks: [], ops: [{ type: 'set', key: 'big', value: 'x'.repeat(70_000) }] }), 413, /larger than 65536/],
    ]
    for (const [what, body, status, message, headers] of cases) {
      const r = await post(what === 'a number as key' ? 'get' : 'commit', body, headers)
      expect({ what, status: r.status }).toEqual({ what, status })
      expect(r.headers.get('content-type')).toMatch(/^application\/json/)
      expect(r.json.error?.message, what).toMatch(message)
      expect(r.text).not.toMatch(/\n\s+at /) // no stack trace
    }
    expect((await post('get', JSON.stringify({ key: 'k' }), jsonHeaders, 'bad namespace!')).status).toBe(400)
    expect((await fetch(`${node.url}/v1/sec/nothing`, { headers: auth })).status).toBe(404)
    expect((await fetch(`${node.url}/v1/sec/get`, { headers: auth })).status).toBe(405)
    expect(await snapshot()).toBe(before)
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200)
  })

  test('a body streamed past the limit without a length is cut off with 413', async () => {
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const u = new URL(`${node.url}/v1/sec/commit`)
      const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { ...jsonHeaders, 'transfer-encoding': 'chunked' } }, (res) => {
        let text = ''
        res.on('data', (d) => (text += d))
        res.on('end', () => resolve({ status: res.statusCode!, body: text }))
      })
      req.on('error', reject)
      const chunk = 'x'.repeat(16 * 1024)
      let sent = 0
      const pump = () => {
        while (sent < 20) {
          sent++
          if (!req.write(chunk)) return req.once('drain', pump)
        }
        req.end()
      }
      pump()
    })
    expect(status).toBe(413)
    expect(JSON.parse(body).error.code).toBe('TOO_LARGE')
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200)
  })

  test('__proto__ and constructor are ordinary keys and values', async () => {
    const value = JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}')
    for (const key of ['__proto__', 'constructor', 'prototype', 'hasOwnProperty']) {
      const w = await post('commit', JSON.stringify({ checks: [{ key, revision: null }], ops: [{ type: 'set', key, value }] }), jsonHeaders, 'proto')
      expect(w.status).toBe(200)
      expect(w.json.ok).toBe(true)
      const r = await post('get', JSON.stringify({ key }), jsonHeaders, 'proto')
      expect(r.json.entry).toMatchObject({ key })
      expect(JSON.stringify((r.json.entry as { value: unknown }).value)).toBe(JSON.stringify(value))
    }
    const listed = await post('list', JSON.stringify({ prefix: '' }), jsonHeaders, 'proto')
    expect((listed.json.entries as Array<{ key: string }>).map((e) => e.key)).toEqual(['__proto__', 'constructor', 'hasOwnProperty', 'prototype'])
    // The same through the client.
    const client = await connect(`zaris://127.0.0.1:${node.port}/proto`, { token: TOKEN })
    expect((await client.get('__proto__'))?.value).toEqual(value)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    await client.close()
    expect((await post('get', JSON.stringify({ key: 'x' }), jsonHeaders, '__proto__')).status).toBe(200)
  })

  test('CORS: only the configured origin, echoed exactly, never *', async () => {
    const pre = await fetch(`${node.url}/v1/sec/get`, {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    })
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-origin')).toBe(ORIGIN)
    expect(pre.headers.get('access-control-allow-headers')).toMatch(/authorization/)
    const other = await fetch(`${node.url}/v1/sec/get`, { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' } })
    expect(other.status).toBe(403)
    expect(other.headers.get('access-control-allow-origin')).toBeNull()
    const ok = await fetch(`${node.url}/v1/sec/get`, { method: 'POST', headers: { ...jsonHeaders, origin: ORIGIN }, body: '{"key":"k"}' })
    expect(ok.headers.get('access-control-allow-origin')).toBe(ORIGIN)
    const evil = await fetch(`${node.url}/v1/sec/get`, { method: 'POST', headers: { ...jsonHeaders, origin: 'http://evil.example' }, body: '{"key":"k"}' })
    expect(evil.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('watchers past the cap get 429 (RATE_LIMITED), and a freed slot is usable again', async () => {
    // A client's watches share one stream, so three clients fill the three slots.
    const url = `zaris://127.0.0.1:${node.port}/sec`
    const clients = await Promise.all([0, 1, 2].map(() => connect(url, { token: TOKEN })))
    const watches = clients.map((c, i) => c.watch('abc'[i]!))
    await Promise.all(watches.map((w) => w.ready))
    const more = clients[0]!.watch('a2') // on a client that has its stream: no slot needed
    await more.ready
    const res = await fetch(`${node.url}/v1/sec/watch?prefix=d`, { headers: auth })
    expect(res.status).toBe(429)
    expect((await res.json()).error.code).toBe('RATE_LIMITED')
    const client = await connect(url, { token: TOKEN })
    const extra = client.watch('d')
    await expect(extra.ready).rejects.toSatisfy((e) => isZarisError(e, 'RATE_LIMITED'))
    await clients[0]!.close()
    const metrics = async () => (await (await fetch(`${node.url}/metrics`, { headers: auth })).text()).match(/^zaris_watchers (\d+)$/m)?.[1]
    for (let i = 0; i < 100 && (await metrics()) !== '2'; i++) await new Promise((r) => setTimeout(r, 20))
    const again = client.watch('e')
    await again.ready
    await Promise.all([client, ...clients].map((c) => c.close()))
  })

  test('namespaces past the cap get 429 (RATE_LIMITED); the open ones keep working', async () => {
    const statuses: number[] = []
    for (let i = 0; i < 12; i++) {
      const r = await post('get', JSON.stringify({ key: 'k' }), jsonHeaders, `cap${i}`)
      statuses.push(r.status)
      if (r.status === 429) expect(r.json.error).toMatchObject({ code: 'RATE_LIMITED', message: expect.stringContaining(`"cap${i}"`) })
    }
    const opened = statuses.filter((s) => s === 200).length
    expect(opened).toBeGreaterThan(0)
    expect(opened).toBeLessThanOrEqual(8)
    expect(statuses).toEqual([...Array(opened).fill(200), ...Array(12 - opened).fill(429)])
    expect((await post('get', JSON.stringify({ key: 'k' }), jsonHeaders, 'cap0')).status).toBe(200)
    expect((await post('get', JSON.stringify({ key: 'k' }))).status).toBe(200)
  })

  test('the token never appears in the output of the node', () => {
    expect(node.output()).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+ \(store: memory; bearer token; cors http:\/\/app\.localhost:5173\)/)
    expect(node.output()).not.toContain(TOKEN)
  })
})
