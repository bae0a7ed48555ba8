/**
 * `httpAdapter`'s options: each bad one refused at once with
 * INVALID_ARGUMENT, naming the field; the good ones doing what they say,
 * against a real node over real HTTP (in this process: `createHandler` +
 * `listen`): a token sent as a bearer, a wrong one refused with
 * UNAUTHORIZED, endpoints with trailing slashes, a namespace at its limits.
 */
import { describe, expect, test } from 'vitest'
import { isZarisError } from 'zaris'
import { httpAdapter, type HttpAdapterOptions } from 'zaris/http'
import { nodeForFile } from './front-node'

const TOKEN = 'a-long-enough-token'
const node = nodeForFile(TOKEN)

function refusal(options: unknown): { code: string; message: string } {
  try {
    httpAdapter(options as HttpAdapterOptions)
  } catch (err) {
    if (!isZarisError(err)) throw err
    return { code: err.code, message: err.message }
  }
  throw new Error(`accepted: ${JSON.stringify(options)}`)
}

const good = { endpoints: ['http://127.0.0.1:1'], namespace: 'ns' }

describe('bad options are refused with INVALID_ARGUMENT, naming the field', () => {
  test.each([
    ['not an object', null, /options must be an object/],
    ['a string', 'http://127.0.0.1:1', /options must be an object/],
    ['no endpoints', { namespace: 'ns' }, /endpoints must be a non-empty array/],
    ['empty endpoints', { ...good, endpoints: [] }, /endpoints must be a non-empty array/],
    ['endpoints not an array', { ...good, endpoints: 'http://127.0.0.1:1' }, /endpoints must be a non-empty array/],
    ['an endpoint that is not a string', { ...good, endpoints: [7861] }, /endpoints: 7861 is not a node URL/],
    ['an endpoint with a path', { ...good, endpoints: ['http://127.0.0.1:1/api'] }, /endpoints: "http:\/\/127\.0\.0\.1:1\/api" is not a node URL/],
    ['an endpoint with a query', { ...good, endpoints: ['http://127.0.0.1:1?x=1'] }, /is not a node URL/],
    ['an endpoint of another scheme', { ...good, endpoints: ['ftp://127.0.0.1:1'] }, /is not a node URL/],
    ['an endpoint with text before it', { ...good, endpoints: ['see http://127.0.0.1:1'] }, /is not a node URL/],
    ['the second endpoint bad', { ...good, endpoints: ['http://127.0.0.1:1', 'x'] }, /endpoints: "x" is not a node URL/],
    ['no namespace', { endpoints: good.endpoints }, /namespace may use only/],
    ['a namespace with a slash', { ...good, namespace: 'a/b' }, /namespace may use only/],
    ['a namespace of 129 characters', { ...good, namespace: 'n'.repeat(129) }, /namespace may use only/],
    ['an empty token', { ...good, token: '' }, /token must be a non-empty string without whitespace/],
    ['a token with a space', { ...good, token: 'a b' }, /token must be/],
    ['a token that is a number', { ...good, token: 12345678 }, /token must be/],
    ['a zero timeout', { ...good, timeout: 0 }, /timeout must be a positive number, got 0/],
    ['a negative timeout', { ...good, timeout: -1 }, /timeout must be a positive number, got -1/],
    ['an infinite timeout', { ...good, timeout: Infinity }, /timeout must be a positive number, got Infinity/],
    ['a timeout as text', { ...good, timeout: '10' }, /timeout must be a positive number, got 10/],
    ['negative retries', { ...good, retries: -1 }, /retries must be an integer >= 0, got -1/],
    ['fractional retries', { ...good, retries: 1.5 }, /retries must be an integer >= 0, got 1.5/],
    ['a zero reconnect limit', { ...good, watchReconnectLimit: 0 }, /watchReconnectLimit must be a positive number/],
    ['a negative linger', { ...good, watchLinger: -5 }, /watchLinger must be a positive number, got -5/],
  ])('%s', (_, options, message) => {
    const r = refusal(options)
    expect(r.code).toBe('INVALID_ARGUMENT')
    expect(r.message).toMatch(message)
  })

  test('good options are taken: a namespace of 128 characters, 0 retries, a linger of 0', () => {
    expect(() => httpAdapter({ ...good, namespace: 'n'.repeat(128), retries: 0, watchLinger: 0, timeout: 1 })).not.toThrow()
    expect(() => httpAdapter({ ...good, namespace: 'a.b_c~d-E9' })).not.toThrow()
  })
})

describe('against a node that asks for a token', () => {
  test('the token goes as a bearer: calls succeed, with trailing slashes on the endpoint', async () => {
    const a = httpAdapter({ endpoints: [`${node.url}//`], namespace: 'ns', token: TOKEN })
    try {
      expect(await a.commit([], [{ type: 'set', key: 'k', value: 1 }])).toMatchObject({ ok: true })
      expect(await a.get('k')).toMatchObject({ value: 1 })
    } finally {
      await a.close()
    }
  })

  test.each([
    ['no token', undefined],
    ['a wrong token', 'another-long-token'],
  ])('%s: refused with UNAUTHORIZED (not taken for a node that is down)', async (_, token) => {
    const a = httpAdapter({ endpoints: [node.url], namespace: 'ns', token, retries: 3 })
    try {
      const err = await a.get('k').catch((e: unknown) => e)
      expect(isZarisError(err) && err.code).toBe('UNAUTHORIZED')
    } finally {
      await a.close()
    }
  })
})
