/**
 * The small ones of issue 19, each through a node over real HTTP: a query
 * naming `__proto__` gets an error that says so; a request id reused with a
 * different commit is refused instead of answered with the old result; a
 * value nested past the documented 64 levels is refused on the wire too.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { createHandler, listen, memoryBackend, type Listening } from 'zaris/server'

const backend = memoryBackend()
let node: Listening
beforeAll(async () => {
  node = await listen(createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf, log: () => {} }), { port: 0 })
})
afterAll(async () => {
  await node.close()
  await backend.close()
})

const post = async (op: string, body: unknown) => {
  const res = await fetch(`${node.url}/v1/edge/${op}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, json: (await res.json()) as { error?: { code: string; message: string } } & Record<string, unknown> }
}

test('a query naming __proto__ or constructor gets 400 naming it (not "given twice"), and pollutes nothing', async () => {
  for (const query of ['__proto__=x', 'prefix=a&__proto__=1', 'constructor=1', '__proto__[polluted]=1&after=0']) {
    for (const route of ['watch', 'events']) {
      const res = await fetch(`${node.url}/v1/edge/${route}?${route === 'events' && !query.includes('after') ? 'after=0&' : ''}${query}`)
      expect(res.status, `${route}?${query}`).toBe(400)
      const { error } = (await res.json()) as { error: { code: string; message: string } }
      expect(error.code).toBe('INVALID_ARGUMENT')
      expect(error.message, `${route}?${query}`).toMatch(/Unrecognized key.*(__proto__|constructor)/)
      expect(error.message).not.toMatch(/given twice/)
    }
  }
  expect(({} as { polluted?: unknown }).polluted).toBeUndefined()
})

test('a request id reused for a different commit is refused, while the same commit retried gets its first answer', async () => {
  const first = { checks: [{ key: 'lock:a', revision: null }], ops: [{ type: 'set', key: 'lock:a', value: null, owner: 'me', ttl: 10_000 }], requestId: 'reuse-0001' }
  const a = await post('commit', first)
  expect(a.json).toMatchObject({ ok: true })
  expect((await post('commit', first)).json).toEqual(a.json)
  const other = { checks: [], ops: [{ type: 'delete', key: 'lock:a' }], requestId: 'reuse-0001' }
  const refused = await post('commit', other)
  expect(refused.status).toBe(400)
  expect(refused.json.error).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/requestId: already used for another commit/) })
  // Nothing of the second commit happened.
  expect((await post('get', { key: 'lock:a' })).json).toMatchObject({ entry: { key: 'lock:a', owner: 'me' } })
})

test('a value nested 65 levels is refused over the wire; 64 are stored', async () => {
  const nested = (levels: number) => JSON.parse('['.repeat(levels) + ']'.repeat(levels))
  expect((await post('commit', { checks: [], ops: [{ type: 'set', key: 'deep', value: nested(64) }] })).status).toBe(200)
  const refused = await post('commit', { checks: [], ops: [{ type: 'set', key: 'deep', value: nested(65) }] })
  expect(refused.status).toBe(400)
  expect(refused.json.error?.message).toMatch(/nested deeper than 64 levels/)
})
