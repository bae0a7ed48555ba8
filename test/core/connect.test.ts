import { expect, test } from 'vitest'
import { Client, clients, connect, errorFromJSON, FencedError, HoldEndedError, isZarisError, parseUrl, registerScheme, ZarisError } from 'zaris'
import { memoryAdapter } from 'zaris/memory'

test('parseUrl understands every built-in form', () => {
  expect(parseUrl('zaris://inproc/demo')).toMatchObject({ kind: 'memory', namespace: 'demo' })
  expect(parseUrl('zaris://idb/tabs')).toMatchObject({ kind: 'indexeddb', namespace: 'tabs' })
  expect(parseUrl('zaris://localhost/demo')).toMatchObject({ kind: 'http', endpoints: ['http://localhost:7861'], namespace: 'demo' })
  expect(parseUrl('zaris://h1:7000,h2/demo')).toMatchObject({ endpoints: ['http://h1:7000', 'http://h2:7861'] })
  expect(parseUrl('https://Node.example:443/ns')).toMatchObject({ endpoints: ['https://node.example:443'] })
  expect(parseUrl('zaris://[::1]:7861/demo')).toMatchObject({ endpoints: ['http://[::1]:7861'] })
  expect(parseUrl('redis://:pw@127.0.0.1:6379/2?ns=jobs')).toMatchObject({ scheme: 'redis', kind: 'redis', namespace: 'jobs' })
  expect(parseUrl('Zaris://inproc/demo')).toEqual({ scheme: 'zaris', kind: 'memory', namespace: 'demo', url: 'Zaris://inproc/demo' })
})

test("the built-in scheme tables: a page's knows memory, IndexedDB and nodes; the full one adds Node's stores, each named in the page's as working elsewhere", async () => {
  const page = await import('../../src/schemes.browser')
  const all = await import('../../src/schemes')
  expect(Object.keys(page.builtInSchemes).sort()).toEqual(['http', 'https', 'zaris'])
  for (const scheme of Object.keys(page.builtInSchemes)) expect(all.builtInSchemes[scheme]).toBe(page.builtInSchemes[scheme])
  const nodeOnly = Object.keys(all.builtInSchemes).filter((s) => !(s in page.builtInSchemes))
  expect(nodeOnly).toContain('redis')
  for (const scheme of nodeOnly) expect(page.elsewhere[scheme], scheme).toBe('Node')
  expect(all.elsewhere).toEqual({})
})

test('a built-in scheme cannot be registered over', () => {
  expect(() => registerScheme('redis', () => memoryAdapter({ namespace: 'x' }))).toThrow(/"redis" is built in/)
})

test('two connects to the same inproc URL share a store; other namespaces never see it', async () => {
  const a = await connect('zaris://inproc/share-1')
  const b = await connect('zaris://inproc/share-1')
  const c = await connect('zaris://inproc/share-2')
  await a.put('k', 'v')
  expect((await b.get('k'))?.value).toBe('v')
  expect(await c.get('k')).toBeUndefined()
  await Promise.all([a.close(), b.close(), c.close()])
})

test('clients() connects lazily, returns the same client every time, and retries a failed connect', async () => {
  let calls = 0
  registerScheme('flaky', () => {
    calls++
    if (calls === 1) throw new Error('not yet')
    return memoryAdapter({ namespace: 'flaky' })
  })
  const stores = clients({ demo: 'zaris://inproc/provider', flaky: { url: 'flaky://x', options: { id: 'me' } } })
  const first = await stores.get('demo')
  expect(await stores.get('demo')).toBe(first)
  await expect(stores.get('flaky')).rejects.toThrow('not yet')
  const flaky = await stores.get('flaky')
  expect(flaky.id).toBe('me')
  expect(calls).toBe(2)
  await stores.close()
  expect(first.closed).toBe(true)
})

test('a registered scheme gets the URL and the options', async () => {
  let seen: unknown
  registerScheme('custom-mem', (url, options) => {
    seen = [url, options.id]
    return memoryAdapter({ namespace: 'custom' })
  })
  const client = await connect('custom-mem://anything', { id: 'x' })
  expect(client).toBeInstanceOf(Client)
  expect(seen).toEqual(['custom-mem://anything', 'x'])
  await client.close()
})

test('errors keep their class and code across the wire', () => {
  const err = new FencedError('stale')
  const back = errorFromJSON(JSON.parse(JSON.stringify(err)))
  expect(back).toBeInstanceOf(FencedError)
  expect(back).toMatchObject({ code: 'FENCED', message: 'stale' })
  expect(errorFromJSON({ code: 'STOLEN', message: 'x' })).toBeInstanceOf(HoldEndedError)
  expect(errorFromJSON({ code: 'WHAT', message: 'x' })).toMatchObject({ code: 'INTERNAL' })
  expect(isZarisError(back, 'FENCED')).toBe(true)
  expect(isZarisError(back, 'CONFLICT')).toBe(false)
  expect(isZarisError({ code: 'FENCED', message: 'plain object' })).toBe(false)
  expect(isZarisError(new ZarisError('INTERNAL', 'x'))).toBe(true)
})
