/** Bad input at every public entry point: a typed error at the call that names the problem. */
import { afterAll, describe, expect, test } from 'vitest'
import { Client, clients, connect, InvalidArgumentError, registerScheme } from 'zaris'
import { memoryAdapter } from 'zaris/memory'

const client = new Client(memoryAdapter({ namespace: 'validation' }))
afterAll(() => client.close())

/** Expects `fn` to throw or reject with INVALID_ARGUMENT (or `code`) and a message matching `message`. */
async function refuses(fn: () => unknown, message: RegExp, code = 'INVALID_ARGUMENT') {
  let caught: unknown
  try {
    await fn()
  } catch (err) {
    caught = err
  }
  expect(caught, `expected a ${code} error matching ${message}`).toBeDefined()
  expect(caught).toMatchObject({ code })
  expect((caught as Error).message).toMatch(message)
}

const badKeys: Array<[unknown, RegExp]> = [
  ['', /key must not be empty/],
  [42, /key must be a string, got number 42/],
  [undefined, /key must be a string/],
  ['x'.repeat(1025), /key is 1025 UTF-16 code units long/],
  ['lock:\uD800x', /key contains a lone surrogate/],
]
const badTtls: Array<[unknown, RegExp]> = [
  [0, /ttl must be a positive finite number/],
  [-5, /ttl must be a positive/],
  [Number.NaN, /ttl must be a positive/],
  [Number.POSITIVE_INFINITY, /ttl must be a positive/],
  ['1000', /ttl must be a positive finite number of milliseconds, got "1000"/],
  [2 ** 40, /ttl must be at most/],
]

describe('keys and TTLs', () => {
  for (const [key, message] of badKeys) {
    test(`key ${String(key).slice(0, 10)} is refused by every key entry point`, async () => {
      await refuses(() => client.put(key as string, 1), message)
      await refuses(() => client.get(key as string), message)
      await refuses(() => client.delete(key as string), message)
      await refuses(() => client.locks.acquire(key as string), message)
      await refuses(() => client.locks.holder(key as string), message)
      await refuses(() => client.leases.grant(key as string), message)
      await refuses(() => client.counters.increment(key as string), message)
      await refuses(() => client.counters.get(key as string), message)
      await refuses(() => client.watch(key as string), message)
      await refuses(() => client.election(key as string), message.source.includes('key') ? new RegExp(message.source.replace('key', 'name')) : message)
    })
  }
  for (const [ttl, message] of badTtls) {
    test(`ttl ${String(ttl)} is refused everywhere a ttl is taken`, async () => {
      await refuses(() => client.put('k', 1, { ttl: ttl as number }), message)
      await refuses(() => client.locks.acquire('k', { ttl: ttl as number }), message)
      await refuses(() => client.leases.grant('k', { ttl: ttl as number }), message)
      await refuses(() => client.election('e', { ttl: ttl as number }), message)
      await refuses(() => new Client(memoryAdapter(), { ttl: ttl as number }), message)
      const lock = (await client.locks.acquire('lock:renew-bad'))!
      await refuses(() => lock.renew(ttl as number), message)
      expect(lock.held).toBe(true) // a refused renew changes nothing
      await lock.release()
    })
  }
})

describe('values', () => {
  const cyclic: Record<string, unknown> = {}
  cyclic.self = cyclic
  let deep: unknown = 1
  for (let i = 0; i < 70; i++) deep = [deep]
  const cases: Array<[string, unknown, RegExp]> = [
    ['undefined', undefined, /value: undefined undefined cannot be stored/],
    ['a function', () => 1, /value: a function cannot be stored/],
    ['NaN', Number.NaN, /value: NaN cannot be stored \(not a finite number\)/],
    ['Infinity inside', { a: [Number.POSITIVE_INFINITY] }, /value\.a\[0\]: Infinity cannot be stored/],
    ['a cycle', cyclic, /value\.self: a cycle cannot be stored/],
    ['a Date', new Date(0), /an object \(Date\) cannot be stored/],
    ['a Map', new Map(), /an object \(Map\) cannot be stored/],
    ['a bigint', 1n, /bigint 1 cannot be stored/],
    ['a symbol', Symbol('s'), /symbol Symbol\(s\) cannot be stored/],
    ['too deep', deep, /nested deeper than 64 levels/],
  ]
  const nested = (levels: number, inner: unknown = []) => {
    let v: unknown = inner
    for (let i = 1; i < levels; i++) v = [v]
    return v
  }
  test('up to 64 levels of arrays and objects are stored; 65 are refused, even with nothing inside the last', async () => {
    await client.put('deep', nested(64) as never)
    await client.put('deep', nested(63, { a: [] }) as never)
    await refuses(() => client.put('deep', nested(65) as never), /nested deeper than 64 levels/)
    await refuses(() => client.put('deep', nested(64, { a: {} }) as never), /nested deeper than 64 levels/)
    expect(JSON.stringify((await client.get('deep'))!.value)).toBe(JSON.stringify(nested(63, { a: [] })))
    await client.delete('deep')
  })
  for (const [name, value, message] of cases) {
    test(`${name} cannot be stored and nothing is written`, async () => {
      await refuses(() => client.put('v', value as never), message)
      // For a lease, an undefined value means "no value" (null), so only put refuses it.
      if (value !== undefined) await refuses(() => client.leases.grant('v', { value: value as never }), message)
      expect(await client.get('v')).toBeUndefined()
    })
  }
})

describe('options', () => {
  test('options of the wrong type are refused, naming the option', async () => {
    await refuses(() => client.put('k', 1, 'fast' as never), /options must be an object, got "fast"/)
    await refuses(() => client.put('k', 1, { ifRevision: -1 }), /ifRevision must be a revision/)
    await refuses(() => client.put('k', 1, { ifRevision: 1.5 }), /ifRevision must be a revision/)
    await refuses(() => client.put('k', 1, { fence: { key: 'l' } as never }), /fence must be a lock or lease/)
    await refuses(() => client.delete('k', { ifRevision: null as never }), /ifRevision must be a revision for delete/)
    await refuses(() => client.locks.acquire('k', { wait: -1 }), /wait must be a number of milliseconds >= 0/)
    await refuses(() => client.locks.acquire('k', { wait: Number.NaN }), /wait must be/)
    await refuses(() => client.locks.acquire('k', { signal: {} as never }), /signal must be an AbortSignal/)
    await refuses(() => client.locks.acquire('k', { autoRenew: 'yes' as never }), /autoRenew must be a boolean/)
    await refuses(() => client.locks.acquire('k', { steal: 1 as never }), /steal must be a boolean/)
    await refuses(() => client.watch('k', { prefix: 'yes' as never }), /prefix must be a boolean/)
    await refuses(() => client.watch('k', { fromRevision: -2 }), /fromRevision must be a revision/)
    await refuses(() => client.watch('k', { signal: 'stop' as never }), /signal must be an AbortSignal/)
    await refuses(() => client.election('e', { candidate: '' }), /candidate must be a non-empty string/)
    await refuses(() => client.counters.increment('c', 1.5), /delta must be a safe integer, got 1.5/)
    await refuses(() => client.counters.increment('c', Number.NaN), /delta must be a safe integer/)
    await refuses(() => new Client(memoryAdapter(), { id: '' }), /id must be a non-empty, well-formed string/)
    await refuses(() => memoryAdapter({ namespace: '' }), /namespace must not be empty/)
  })

  test('a counter refuses a key that holds something else, and leaving the safe range', async () => {
    await client.put('not-a-counter', 'text')
    await refuses(() => client.counters.increment('not-a-counter'), /"not-a-counter".*holds "text", not a number/)
    await client.put('huge', Number.MAX_SAFE_INTEGER)
    await refuses(() => client.counters.increment('huge'), /"huge".*is not a safe integer/)
    expect((await client.get('huge'))?.value).toBe(Number.MAX_SAFE_INTEGER)
  })
})

describe('connect, clients and registerScheme', () => {
  const badUrls: Array<[unknown, RegExp]> = [
    [undefined, /a connection string must be a non-empty string/],
    ['', /a connection string must be a non-empty string/],
    ['demo', /has no scheme \(try zaris:\/\/inproc\/demo\)/],
    ['ftp://host/ns', /unknown scheme "ftp:\/\/"/],
    ['zaris://inproc', /names no namespace/],
    ['zaris://inproc/', /names no namespace/],
    ['zaris://inproc/bad ns', /namespace "bad ns" may use only/],
    ['zaris://host:99999/ns', /"host:99999" is not a host\[:port\]/],
    ['zaris://ho st:1/ns', /is not a host\[:port\]/],
    ['redis://127.0.0.1:6379/0', /add \?ns=<namespace>/],
  ]
  for (const [url, message] of badUrls) {
    test(`connect(${JSON.stringify(url)}) is refused`, async () => {
      await refuses(() => connect(url as string), message, 'INVALID_URL')
    })
  }

  test('options must be an object', async () => {
    await refuses(() => connect('zaris://inproc/x', null as never), /options must be an object/)
  })

  test('clients() checks every URL at once and names unknown stores', async () => {
    await refuses(() => clients({ a: 'nope://x' }), /unknown scheme/, 'INVALID_URL')
    await refuses(() => clients(null as never), /clients\(\) takes an object/)
    const stores = clients({ demo: 'zaris://inproc/clients-demo' })
    await refuses(() => stores.get('other' as 'demo'), /no store named "other"; known: demo/)
    await stores.close()
  })

  test('registerScheme refuses bad schemes, built-in ones and non-functions', () => {
    expect(() => registerScheme('Bad Scheme', () => memoryAdapter())).toThrow(InvalidArgumentError)
    expect(() => registerScheme('zaris', () => memoryAdapter())).toThrow(/is built in/)
    expect(() => registerScheme('mine', 'nope' as never)).toThrow(/factory must be a function/)
  })
})
