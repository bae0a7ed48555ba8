/**
 * The client libraries under the Redis adapter (src/adapters/redis/client.ts):
 * a `redis://` URL picks its library; a user's node-redis client — v5 or v6,
 * RESP2 or RESP3, whatever reply types it maps to — is used as given and left
 * open on `close()`; what is not a client zaris knows is refused; and while
 * Redis is down, a call over node-redis fails within the resend window
 * instead of waiting forever, and works again once Redis is back. Against
 * real redis-servers.
 */
import { Redis } from 'ioredis'
import { createClient, createClientPool, createSentinel, RESP_TYPES } from 'redis'
import { createClient as createClientV5 } from 'redis5'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Client, connect, type WatchEvent } from 'zaris'
import { redisAdapter, type RedisClient } from 'zaris/redis'
import { RESEND_WINDOW_MS } from '../../src/adapters/redis/link'
import { parseRedisUrl, shareUrl } from '../../src/adapters/redis/connection'
import { until } from '../conformance/util'
import { LIBRARIES, named, userClient, using } from './clients'
import { startRedis, type RedisServer } from './server'

let server: RedisServer
let raw: Redis
beforeAll(async () => {
  server = await startRedis()
  raw = new Redis(server.port, '127.0.0.1')
})
afterAll(async () => {
  raw?.disconnect()
  await server?.dispose()
})

let n = 0
const fresh = () => `c${++n}-${Math.random().toString(36).slice(2, 8)}`

/** The connections Redis has open, by name (node-redis's duplicate keeps its parent's). */
async function connections(): Promise<number> {
  return String(await raw.call('CLIENT', 'LIST')).trim().split('\n').length
}

/** Locks, fenced writes, counters, reads, lists and watches through `client` (id `user`), each checked. */
async function exercise(client: Client): Promise<void> {
  const events: WatchEvent[] = []
  const watch = client.watch('job:', { prefix: true })
  await watch.ready
  void (async () => {
    for await (const e of watch) events.push(e)
  })()
  const lock = await client.locks.acquire('lock:a', { ttl: 10_000 })
  expect(lock).not.toBeNull()
  await client.put('job:1', { n: 1, s: 'é 🙂' }, { fence: lock! })
  await client.put('job:2', 2)
  expect(await client.counters.increment('count', 5)).toBe(5)
  expect((await client.get('job:1'))?.value).toEqual({ n: 1, s: 'é 🙂' })
  expect((await client.list('job:')).map((e) => e.key)).toEqual(['job:1', 'job:2'])
  expect(await client.locks.holder('lock:a')).toMatchObject({ owner: 'user', token: lock!.token })
  await until(() => events.length === 2)
  expect(events.map((e) => [e.type, e.key])).toEqual([['put', 'job:1'], ['put', 'job:2']])
  expect(await lock!.release()).toBe(true)
}

describe('which library a redis:// URL opens', () => {
  test('?client= names it (ioredis, redis for node-redis, iovalkey); without it, the first installed: ioredis here', async () => {
    for (const library of ['ioredis', 'redis', 'iovalkey'] as const) {
      const parsed = parseRedisUrl(using(server.url('x'), library))
      expect(parsed).toMatchObject({ library, namespace: 'x' })
      expect(parsed.url).not.toMatch(/client=|ns=/)
      const connection = await shareUrl(parsed.url, parsed.library, undefined, 'zaris:x')
      expect(connection.link.library).toBe(library === 'iovalkey' ? 'ioredis' : library)
      await connection.release()
    }
    const plain = parseRedisUrl(server.url('x'))
    expect(plain.library).toBeUndefined()
    const connection = await shareUrl(plain.url, undefined, undefined, 'zaris:x')
    expect(connection.link.library).toBe('ioredis')
    await connection.release()
    expect(() => parseRedisUrl(`${server.url('x')}&client=node_redis`)).toThrow(expect.objectContaining({ code: 'INVALID_URL', message: expect.stringContaining('ioredis, redis, iovalkey') }))
  })

  test("a URL's library gets its own options: node-redis's createClient options through `redis`", async () => {
    const ns = fresh()
    // RESP2 is what zaris asks for by default; the caller's options win.
    const a = await redisAdapter({ url: using(server.url(ns), 'redis'), redis: { name: `own-${ns}`, RESP: 3 } })
    await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    const list = String(await raw.call('CLIENT', 'LIST'))
    expect(list).toMatch(new RegExp(`name=own-${ns} .*resp=3`))
    await a.close()
  })
})

/** What the tests do with a user's node-redis client, whatever its version and reply types. */
interface NodeRedis {
  on(event: 'error', listener: () => void): unknown
  connect(): Promise<unknown>
  ping(): Promise<unknown>
  close(): Promise<void>
  readonly isOpen: boolean
}

/** The user's node-redis clients: v6 (RESP3 by default) and v5 (RESP2), and clients that map replies to other types. */
const userClients: Array<[string, () => NodeRedis]> = [
  ['node-redis 6, RESP3', () => createClient({ url: server.url('') })],
  ['node-redis 6, RESP2', () => createClient({ url: server.url(''), RESP: 2 })],
  ['node-redis 5, RESP2', () => createClientV5({ url: server.url('') })],
  [
    'node-redis 6, RESP3, replies mapped to Buffers, Maps and strings',
    () => createClient({ url: server.url(''), commandOptions: { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer, [RESP_TYPES.MAP]: Map, [RESP_TYPES.NUMBER]: String } } }),
  ],
]

describe("a user's node-redis client", () => {
  test.each(userClients)('is used as given: commits, reads, lists, counters, locks and watches work (%s); close() leaves it open and closes what zaris opened', async (_name, make) => {
    const user = make()
    user.on('error', () => {})
    await user.connect()
    const before = await connections()
    const client = new Client(await redisAdapter({ client: user as unknown as RedisClient, namespace: fresh() }), { id: 'user' })
    await exercise(client)
    // One connection more while it watched: the duplicate zaris opened for XREAD BLOCK.
    expect(await connections()).toBe(before + 1)
    await client.close()
    expect(user.isOpen).toBe(true)
    expect(await user.ping()).toBe('PONG')
    await until(async () => (await connections()) === before)
    await user.close()
  })

  test('takes many calls at once without a warning from Node (no listener per call on a shared signal)', async () => {
    const user = createClient({ url: server.url('') })
    await user.connect()
    const warnings: Error[] = []
    const onWarning = (w: Error) => warnings.push(w)
    process.on('warning', onWarning)
    try {
      const client = new Client(await redisAdapter({ client: user, namespace: fresh() }))
      await Promise.all(Array.from({ length: 50 }, (_, i) => client.put(`k${i}`, i)))
      expect((await client.list('k')).length).toBe(50)
      await client.close()
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings.map((w) => w.message)).toEqual([])
    } finally {
      process.off('warning', onWarning)
      await user.close()
    }
  })

  test('that is not connected, a pool, a Sentinel or anything else is refused with INVALID_ARGUMENT naming what to pass', async () => {
    const notOpen = createClient({ url: server.url('') })
    await expect(redisAdapter({ client: notOpen, namespace: 'x' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('client.connect()') })
    const pool = createClientPool({ url: server.url('') })
    await expect(redisAdapter({ client: pool as unknown as RedisClient, namespace: 'x' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('pool is not supported') })
    const sentinel = createSentinel({ name: 'mymaster', sentinelRootNodes: [{ host: '127.0.0.1', port: server.port }] })
    await expect(redisAdapter({ client: sentinel as unknown as RedisClient, namespace: 'x' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('Sentinel') })
    for (const bad of [{}, 'redis://x', { sendCommand: () => {} }, null]) {
      await expect(redisAdapter({ client: bad as unknown as RedisClient, namespace: 'x' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('node-redis client') })
    }
  })
})

describe('iovalkey (its conformance run: test/long)', () => {
  test('a redis:// URL with client=iovalkey carries locks, counters, reads and watches', async () => {
    const client = await connect(using(server.url(fresh()), 'iovalkey'), { id: 'user' })
    await exercise(client)
    await client.close()
  })

  test("a user's iovalkey client is used as given, and left open on close()", async () => {
    const user = await userClient('iovalkey', server.port)
    const client = new Client(await redisAdapter({ client: user.client, namespace: fresh() }), { id: 'user' })
    await exercise(client)
    await client.close()
    expect(await user.ping()).toBe('PONG')
    await user.close()
  })
})

describe('Redis down under node-redis', () => {
  test.each(LIBRARIES.map(named))('a call that reaches Redis while it is still loading its data after a restart waits for it (LOADING) rather than failing: %s', async (name) => {
    const library = LIBRARIES.find((l) => named(l) === name)!
    // 10 000 keys at 100 µs each (and a look at the clients every kilobyte): a second or more of LOADING after the restart.
    const own = await startRedis({ args: ['--key-load-delay', '100', '--loading-process-events-interval-bytes', '1024'] })
    try {
      const client = await connect(using(own.url(fresh()), library))
      await client.put('k', 1)
      const direct = new Redis(own.port, '127.0.0.1')
      for (let i = 0; i < 10; i++) await direct.mset(Object.fromEntries(Array.from({ length: 1_000 }, (_, j) => [`filler:${i}:${j}`, 'x'])))
      await direct.call('SAVE')
      direct.disconnect()
      await own.stop()
      const restarting = own.start()
      const loading = new Redis(own.port, '127.0.0.1', { enableReadyCheck: false, retryStrategy: () => 20 })
      loading.on('error', () => {})
      await until(async () => /LOADING/.test(String(await loading.call('PING').catch((e: Error) => e.message))), 5_000)
      loading.disconnect()
      // Sent while Redis answers LOADING: it goes through once Redis has loaded, with the data of before.
      const entry = await client.put('k', 2)
      expect(entry.value).toBe(2)
      await restarting
      expect((await client.get('k'))?.value).toBe(2)
      await client.close()
    } finally {
      await own.dispose()
    }
  }, 30_000)

  test("a call of a user's client that waits in its offline queue is ended once the resend window is over (the client made to claim it is ready: the race of a drop before the write, made certain)", async () => {
    const own = await startRedis()
    try {
      const user = createClient({ url: `redis://127.0.0.1:${own.port}` })
      user.on('error', () => {})
      await user.connect()
      const client = new Client(await redisAdapter({ client: user, namespace: fresh() }))
      await client.put('k', 1)
      const reconnecting = new Promise((resolve) => user.once('reconnecting', resolve))
      await own.stop()
      await reconnecting
      // What a command issued just before the drop sees: a client that looks ready, so no timeout of the call's own. Once.
      let real: (() => boolean) | undefined
      for (let p = Object.getPrototypeOf(user); p && !real; p = Object.getPrototypeOf(p)) real = Object.getOwnPropertyDescriptor(p, 'isReady')?.get
      let lie = true
      Object.defineProperty(user, 'isReady', { get: () => (lie ? !(lie = false) : real!.call(user)), configurable: true })
      const started = Date.now()
      await expect(client.put('k', 2)).rejects.toMatchObject({ code: 'UNAVAILABLE' })
      expect(lie).toBe(false)
      expect(Date.now() - started).toBeLessThan(RESEND_WINDOW_MS + 1_500)
      await own.start()
      await until(async () => (await client.put('k', 3).then(() => true, () => false)), 10_000)
      await client.close()
      user.destroy()
    } finally {
      await own.dispose()
    }
  }, 30_000)

  const cases: Array<[string, (port: number, ns: string) => Promise<{ client: Client; close(): Promise<void> }>]> = [
    [
      'a redis:// URL (offline queue off: the link resends)',
      async (port, ns) => {
        const client = new Client(await redisAdapter({ url: using(`redis://127.0.0.1:${port}/0?ns=${ns}`, 'redis') }))
        return { client, close: () => client.close() }
      },
    ],
    [
      "a user's client (offline queue on)",
      async (port, ns) => {
        const user = createClient({ url: `redis://127.0.0.1:${port}` })
        user.on('error', () => {})
        await user.connect()
        const client = new Client(await redisAdapter({ client: user, namespace: ns }))
        return { client, close: async () => (await client.close(), user.destroy()) }
      },
    ],
  ]
  test.each(cases)('a call fails with UNAVAILABLE within the resend window, not never, and works again once Redis is back: %s', async (_name, open) => {
    const own = await startRedis()
    try {
      const { client, close } = await open(own.port, fresh())
      await client.put('k', 1)
      await own.stop()
      const started = Date.now()
      await expect(client.put('k', 2)).rejects.toMatchObject({ code: 'UNAVAILABLE' })
      // The window (3 s), not node-redis's own limits (its 5 s timeouts) nor forever.
      expect(Date.now() - started).toBeLessThan(RESEND_WINDOW_MS + 1_500)
      await own.start()
      // Without persistence Redis forgot 'k'; what matters is that calls go through again.
      await until(async () => (await client.put('k', 3).then(() => true, () => false)), 10_000)
      expect((await client.get('k'))?.value).toBe(3)
      await close()
    } finally {
      await own.dispose()
    }
  }, 30_000)
})
