/**
 * The Redis adapter beyond the shared contract: URLs and credentials, the key
 * layout (one hash tag, no KEYS), Redis's clock for deadlines, idempotent
 * retries, expiry reported once with many expiry timers running, and an idle
 * process that exits. Against a real redis-server.
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import Redis from 'ioredis'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Client, connect, type Adapter, type Check, type CommitResult, type WatchEvent } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { scriptLibrary } from '../../src/adapters/redis/functions'
import { loadLibrary } from '../../src/adapters/redis/load'
import { namespaceKeys } from '../../src/adapters/redis/codec'
import { evalText, LOCK_SCRIPT, SCRIPTS } from '../../src/adapters/redis/scripts'
import { until } from '../conformance/util'
import { LIBRARIES, named, userClient, using } from './clients'
import { TcpProxy } from './proxy'
import { commandCalls, startRedis, type RedisServer } from './server'

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
const fresh = () => `t${++n}-${Math.random().toString(36).slice(2, 8)}`

async function keysOf(pattern = '*'): Promise<string[]> {
  const found: string[] = []
  let cursor = '0'
  do {
    const [next, keys] = await raw.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = next
    found.push(...keys)
  } while (cursor !== '0')
  return found.sort()
}

describe('connection strings', () => {
  test('connect opens redis:// URLs; namespaces and database numbers are separate stores', async () => {
    const ns = fresh()
    const a = await connect(server.url(ns, 0))
    const b = await connect(server.url(ns + '-other', 0))
    const c = await connect(server.url(ns, 1))
    await a.put('k', 'a')
    await b.put('k', 'b')
    await c.put('k', 'c')
    await a.put('k', 'a2')
    expect((await a.get('k'))?.value).toBe('a2')
    expect((await b.get('k'))?.value).toBe('b')
    expect((await c.get('k'))?.value).toBe('c')
    expect((await a.get('k'))?.revision).toBe(2)
    expect((await c.get('k'))?.revision).toBe(1)
    await Promise.all([a.close(), b.close(), c.close()])
  })

  test.each(LIBRARIES)('user:pass in the URL authenticates; wrong credentials are UNAUTHORIZED, nobody listening is UNAVAILABLE (%s)', async (library) => {
    const secured = await startRedis({ args: ['--user', 'alice', 'on', '>s3cret', '~*', '&*', '+@all', '--requirepass', 'pw'] })
    const url = (auth: string, ns: string) => using(`redis://${auth}127.0.0.1:${secured.port}/0?ns=${ns}`, library)
    try {
      const ns = fresh()
      const alice = await connect(url('alice:s3cret@', ns))
      await alice.put('k', 1)
      const byDefault = await connect(url(':pw@', ns))
      expect((await byDefault.get('k'))?.value).toBe(1)
      await Promise.all([alice.close(), byDefault.close()])

      const wrong = connect(url('alice:wrong@', ns))
      await expect(wrong).rejects.toMatchObject({ code: 'UNAUTHORIZED' })
      // The password does not leak into the message.
      await expect(wrong).rejects.toThrow(/alice:\*\*\*@/)
      await expect(connect(url('', ns))).rejects.toMatchObject({ code: 'UNAUTHORIZED' })
    } finally {
      await secured.dispose()
    }
    const started = Date.now()
    await expect(connect(url('', 'x'))).rejects.toMatchObject({ code: 'UNAVAILABLE' })
    // At once: a connection that never worked is not retried.
    expect(Date.now() - started).toBeLessThan(3_000)
  })

  test('bad input is refused with a message naming it', async () => {
    await expect(connect(`redis://127.0.0.1:${server.port}/0`)).rejects.toMatchObject({ code: 'INVALID_URL', message: expect.stringContaining('?ns=') })
    await expect(redisAdapter({ url: `redis://127.0.0.1:${server.port}/x/y` })).rejects.toMatchObject({ code: 'INVALID_URL' })
    await expect(redisAdapter({ url: server.url('a{b}') })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('namespace') })
    await expect(redisAdapter({} as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('url or client') })
    await expect(redisAdapter({ url: server.url('h'), historySize: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('historySize') })
    const a = await redisAdapter({ url: server.url(fresh()) })
    await expect(a.get('\uD800x')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('surrogate') })
    await expect(a.commit([], [{ type: 'set', key: 'k', value: 1, ttl: -1 }])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(a.commit([{ key: 'k' } as never], [])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('checks[0]') })
    await expect(a.commit([], [{ type: 'set', key: 'k', value: 1 }, { type: 'delete', key: 'k' }])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('twice'),
    })
    await a.close()
  })

  test('without a client library installed, the adapter says so with an UnsupportedError; with several, the first of ioredis, redis, iovalkey', async () => {
    // Real failed resolutions: packages that are not installed.
    const missing = (library: string) => `${library}-not-installed-zaris-test`
    await expect(loadLibrary('redis', [['redis', missing('redis')]])).rejects.toMatchObject({ code: 'UNSUPPORTED', message: expect.stringContaining('npm install redis') })
    await expect(loadLibrary(undefined, [['ioredis', missing('ioredis')], ['redis', missing('redis')], ['iovalkey', missing('iovalkey')]])).rejects.toMatchObject({
      code: 'UNSUPPORTED',
      message: expect.stringMatching(/none is installed: run `npm install ioredis` \(or `npm install redis` for node-redis, or `npm install iovalkey`\)/),
    })
    expect((await loadLibrary(undefined, [['ioredis', missing('ioredis')], ['redis', 'redis'], ['iovalkey', 'iovalkey']])).library).toBe('redis')
    expect((await loadLibrary(undefined, [['ioredis', missing('ioredis')], ['redis', missing('redis')], ['iovalkey', 'iovalkey']])).library).toBe('iovalkey')
    expect((await loadLibrary(undefined)).library).toBe('ioredis')
  })
})

describe('layout in Redis', () => {
  test('every key of a namespace carries its hash tag (one Cluster slot), and nothing else is written', async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    const events: WatchEvent[] = []
    const unwatch = await a.watch('', { event: (e) => events.push(e), error: () => {} })
    await a.commit([], [{ type: 'set', key: 'k', value: 1, ttl: 60_000, owner: 'me' }])
    await a.commit([], [{ type: 'set', key: 'j', value: 2 }], { requestId: 'req-1234567890' })
    await a.commit([], [{ type: 'delete', key: 'j' }])
    await until(() => events.length === 3)
    unwatch()
    const keys = await keysOf(`zaris:{${ns}}:*`)
    expect(keys.length).toBeGreaterThanOrEqual(5)
    for (const key of keys) expect(key).toMatch(new RegExp(`^zaris:\\{${ns}\\}:(rev|data|idx|exp|log|req|reqt)$`))
    // Nothing outside the namespace's keys mentions it.
    expect((await keysOf(`*${ns}*`)).filter((k) => !keys.includes(k))).toEqual([])
    await a.close()
  })

  test('list reads the key index: no KEYS or SCAN, and other namespaces are not read', async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    const other = await redisAdapter({ url: server.url(ns + 'x') })
    await other.commit([], Array.from({ length: 50 }, (_, i) => ({ type: 'set' as const, key: `p/${i}`, value: i })))
    await a.commit([], [{ type: 'set', key: 'p/b', value: 2 }, { type: 'set', key: 'p/a', value: 1 }, { type: 'set', key: 'q', value: 3 }, { type: 'set', key: 'p', value: 0 }])
    await raw.config('RESETSTAT')
    expect((await a.list('p/')).entries.map((e) => e.key)).toEqual(['p/a', 'p/b'])
    expect((await a.list('p')).entries.map((e) => e.key)).toEqual(['p', 'p/a', 'p/b'])
    expect((await a.list('')).entries.map((e) => e.key)).toEqual(['p', 'p/a', 'p/b', 'q'])
    expect(await a.list('zzz')).toEqual({ entries: [], more: false })
    const stats = (await raw.info('commandstats')) as string
    expect(stats).not.toMatch(/cmdstat_keys:/)
    expect(stats).not.toMatch(/cmdstat_scan:/)
    expect(stats).toMatch(/cmdstat_zrangebylex:calls=4,/)
    await Promise.all([a.close(), other.close()])
  })

  test('list pages in UTF-16 order: a store whose key index predates that order is brought to it by its first list', async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    const keys = ['k/\uff01', 'k/\ud83d\ude00', 'k/\ue000', 'k/a']
    await a.commit([], keys.map((key) => ({ type: 'set' as const, key, value: key })))
    // As an older version left it: index members are the keys' UTF-8 bytes, and the store carries no mark.
    const idx = `zaris:{${ns}}:idx`
    await raw.del(idx)
    await raw.zadd(idx, ...keys.flatMap((k) => ['0', k]))
    await raw.hdel(`zaris:{${ns}}:rev`, 'ix')
    const pages: string[][] = []
    for (let after: string | undefined, more = true; more; ) {
      const page = await a.list('k/', after === undefined ? { limit: 1 } : { after, limit: 1 })
      pages.push(page.entries.map((e) => e.key))
      more = page.more
      after = page.entries.at(-1)?.key
    }
    expect(pages.flat()).toEqual([...keys].sort())
    // Rewritten once: a member that held the bytes EF/EE now holds F6/F5.
    const members = (await raw.zrangeBuffer(idx, '0', '-1')).map((m) => m.toString('hex'))
    expect(members.some((m) => /^6b2f(ee|ef)/.test(m))).toBe(false)
    expect(members.filter((m) => /^6b2f(f5|f6)/.test(m))).toHaveLength(2)
    // Marked, so later lists do not scan the index again.
    expect(await raw.hget(`zaris:{${ns}}:rev`, 'ix')).toBe('1')
    await a.commit([], [{ type: 'delete', key: 'k/\uff01' }])
    expect((await a.list('k/')).entries.map((e) => e.key)).toEqual(['k/\ud83d\ude00', 'k/\ue000', 'k/a'].sort())
    expect(await raw.zcard(idx)).toBe(3)
    await a.close()
  })

  test("deadlines are kept on Redis's clock (TIME), not the client's", async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    await a.commit([], [{ type: 'set', key: 'k', value: 1, ttl: 10_000 }])
    const [sec, usec] = (await raw.time()) as [string | number, string | number]
    const nowMicros = Number(sec) * 1e6 + Number(usec)
    const deadline = Number(await raw.zscore(`zaris:{${ns}}:exp`, 'k'))
    expect(deadline - nowMicros).toBeGreaterThan(9_000_000)
    expect(deadline - nowMicros).toBeLessThanOrEqual(10_000_000)
    const ttl = (await a.get('k'))!.ttl!
    expect(ttl).toBeGreaterThan(9_000)
    expect(ttl).toBeLessThanOrEqual(10_000)
    await a.close()
  })

  test('keys, values and owners round-trip unchanged: spaces, newlines, emoji, deep JSON', async () => {
    const a = await redisAdapter({ url: server.url(fresh()) })
    const key = 'a b\nc 😀 \u00ff\u0000'
    const value = { s: 'line\nnext 😀', n: [1.5, -2, 2 ** 53 - 1, 1e-300], nested: { deep: [[[null, true, false, '']]] }, empty: [], obj: {} }
    const owner = 'owner with spaces\nand a newline'
    const r = await a.commit([], [{ type: 'set', key, value, owner, ttl: 60_000 }])
    expect(r.ok && r.entries[0]).toMatchObject({ key, value, owner })
    const e = await a.get(key)
    expect(e).toMatchObject({ key, value, owner })
    expect((await a.list('a b')).entries[0]).toMatchObject({ key, value, owner })
    await a.close()
  })
})

describe('commits', () => {
  test('position() is the revision and an epoch that stays the same for the life of the store', async () => {
    const a = await redisAdapter({ url: server.url(fresh()) })
    const start = await a.position()
    expect(start.revision).toBe(0)
    expect(start.epoch).toMatch(/^\d+$/)
    const r = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    expect(await a.position()).toEqual({ revision: r.ok && r.revision, epoch: start.epoch })
    const other = await redisAdapter({ url: server.url(fresh()) })
    expect((await other.position()).epoch).not.toBe('')
    await Promise.all([a.close(), other.close()])
  })

  test('a commit retried with the same requestId is answered, not applied twice', async () => {
    const a = await redisAdapter({ url: server.url(fresh()) })
    const once = await a.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: 1 }], { requestId: 'retry-0123456789' })
    const again = await a.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: 1 }], { requestId: 'retry-0123456789' })
    expect(once.ok).toBe(true)
    expect(again).toEqual(once)
    const next = await a.commit([], [{ type: 'set', key: 'other', value: 2 }])
    expect(next.ok && once.ok && next.revision).toBe(once.ok && once.revision + 1)
    await a.close()
  })

  test('request records are forgotten once past their retention (pruned by a later commit), however many there were', async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns), requestRetention: 1_500 })
    const ids = Array.from({ length: 250 }, (_, i) => `old-request-${i}-0123456789`)
    for (const requestId of ids) await a.commit([], [{ type: 'add', key: 'n', delta: 1 }], { requestId })
    expect(await raw.hlen(`zaris:{${ns}}:req`)).toBe(250)
    // Past 1.1x the retention, when the oldest is due for pruning.
    await new Promise((resolve) => setTimeout(resolve, 1_700))
    // At most 100 go per commit, every commit until none is due.
    for (let i = 0; i < 3; i++) await a.commit([], [{ type: 'set', key: 'k', value: i }], { requestId: `new-request-${i}-0123456789` })
    expect(await raw.hlen(`zaris:{${ns}}:req`)).toBe(3)
    expect(await raw.zcard(`zaris:{${ns}}:reqt`)).toBe(3)
    // Forgotten: the same id now is a new commit.
    const again = await a.commit([], [{ type: 'add', key: 'n', delta: 1 }], { requestId: ids[0] })
    expect(again.ok && again.entries[0]!.value).toBe(251)
    await a.close()
  })

  test("a commit reads the oldest request record's time with the revision counter: the records' index is read only once one may be due", async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    const zranges = () => commandCalls(raw, 'zrange')
    // Two entries with deadlines: the sweep's read of exp also tells the reply the next deadline (no second read).
    await a.commit([], [{ type: 'set', key: 'later0', value: 0, ttl: 60_000 }, { type: 'set', key: 'later1', value: 0, ttl: 60_000 }])
    await a.commit([], [{ type: 'set', key: 'k', value: 0 }], { requestId: 'first-request-0123456789' })
    // The first record wrote the oldest time to rev's 'p': from now on a commit's one ZRANGE is its expiry sweep's.
    expect(Number(await raw.hget(`zaris:{${ns}}:rev`, 'p'))).toBeGreaterThan(0)
    const before = await zranges()
    for (let i = 1; i <= 10; i++) await a.commit([], [{ type: 'set', key: 'k', value: i }], { requestId: `request-${i}-0123456789` })
    expect((await zranges()) - before).toBe(10)
    await a.close()
  })

  test('a commit that checks a key and writes it reads its entry once', async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    const hgets = () => commandCalls(raw, 'hget')
    const counted = async (commit: () => Promise<CommitResult>) => {
      const before = await hgets()
      expect((await commit()).ok).toBe(true)
      return (await hgets()) - before
    }
    const first = await a.commit([], [{ type: 'set', key: 'k', value: 0 }])
    const unchecked = await counted(() => a.commit([], [{ type: 'set', key: 'k', value: 1 }, { type: 'set', key: 'j', value: 1 }]))
    // The same writes behind a check of one of their keys (the generic script): no more reads.
    const checked = await counted(() => a.commit([{ key: 'k', created: first.ok ? first.revision : 0 }], [{ type: 'set', key: 'k', value: 2 }, { type: 'set', key: 'j', value: 2 }]))
    expect(checked).toBe(unchecked)
    await a.close()
  })

  test('a get or a list expires every due entry first, whatever key or prefix it reads', async () => {
    for (const read of [(a: Adapter) => a.get('elsewhere'), (a: Adapter) => a.list('elsewhere/')]) {
      const ns = fresh()
      const a = await redisAdapter({ url: server.url(ns) }) // no watch here: no expiry timer runs
      await a.commit([], [{ type: 'set', key: 'due0', value: 1, ttl: 40 }, { type: 'set', key: 'due1', value: 1, ttl: 40 }])
      await new Promise((resolve) => setTimeout(resolve, 80))
      expect(await raw.hlen(`zaris:{${ns}}:data`)).toBe(2)
      await read(a)
      expect(await raw.hlen(`zaris:{${ns}}:data`)).toBe(0)
      expect((await raw.xrange(`zaris:{${ns}}:log`, '-', '+')).map(([, f]) => `${f[1]} ${f[3]}`)).toEqual(['p due0', 'p due1', 'e due0', 'e due1'])
      await a.close()
    }
  })

  test('a list without a limit reads the key index in batches: 300 keys come back, each once, in order', async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    const keys = Array.from({ length: 300 }, (_, i) => `many/${String(i).padStart(3, '0')}`)
    for (let i = 0; i < keys.length; i += 50) await a.commit([], keys.slice(i, i + 50).map((key) => ({ type: 'set' as const, key, value: 1 })))
    const page = await a.list('many/')
    expect(page.entries.map((e) => e.key)).toEqual(keys)
    expect(page.more).toBe(false)
    await a.close()
  })

  test('an entry due beyond the sweep\'s limit is expired where a commit reads it, in its own revision before the commit\'s', async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    const seeded = await a.commit([], ['due0', 'due1', 'due2'].map((key) => ({ type: 'set' as const, key, value: 1, ttl: 40 })))
    await a.close()
    await new Promise((resolve) => setTimeout(resolve, 80))
    // The commit script by hand with a sweep limit of 1: it expires due0; due2 is expired where its check reads it.
    const reply = (await raw.eval(evalText(SCRIPTS.commit), 9, ...namespaceKeys(ns), 10_000, 1, 0, '', 60_000, 1, 'due2', 'r', '', 1, 's', 'due2', '2', '', '', '')) as unknown[]
    const r = seeded.ok ? seeded.revision : 0
    expect(reply[0]).toBe('ok')
    expect(String(reply[3])).toMatch(new RegExp(`^${r + 3} `))
    const log = await raw.xrange(`zaris:{${ns}}:log`, String(r + 1), '+')
    expect(log.map(([id, fields]) => [id, fields[1], fields[3]])).toEqual([[`${r + 1}-0`, 'e', 'due0'], [`${r + 2}-0`, 'e', 'due2'], [`${r + 3}-0`, 'p', 'due2']])
    // due1 waits for the next sweep.
    expect(await raw.hexists(`zaris:{${ns}}:data`, 'due1')).toBe(1)
  })

  test('a sweep expires every due entry up to its limit, each in its revision, and drops a deadline whose entry is gone', async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    const seeded = await a.commit([], ['due0', 'due1', 'due2'].map((key) => ({ type: 'set' as const, key, value: 1, ttl: 40 })))
    await a.close()
    const r = seeded.ok ? seeded.revision : 0
    // A deadline left in exp for a key data no longer holds (an older layout, a hand edit).
    await raw.zadd(`zaris:{${ns}}:exp`, 1, 'gone')
    await new Promise((resolve) => setTimeout(resolve, 80))
    const hmgets = () => commandCalls(raw, 'hmget')
    const before = await hmgets()
    const reply = (await raw.eval(evalText(SCRIPTS.commit), 9, ...namespaceKeys(ns), 10_000, 500, 0, '', 60_000, 0, 1, 's', 'k', '1', '', '', '')) as unknown[]
    expect(String(reply[3])).toMatch(new RegExp(`^${r + 4} `))
    // Four revisions, the counter's hash read once: the later ones are HINCRBYs.
    expect((await hmgets()) - before).toBe(1)
    const log = await raw.xrange(`zaris:{${ns}}:log`, String(r + 1), '+')
    expect(log.map(([, fields]) => [fields[1], fields[3]])).toEqual([['e', 'due0'], ['e', 'due1'], ['e', 'due2'], ['p', 'k']])
    expect(await raw.zrange(`zaris:{${ns}}:exp`, '0', '-1')).toEqual([])
    expect(reply[2]).toBe('-1')
  })

  const resendCases: Array<[string, (proxy: TcpProxy, ns: string) => Promise<{ client: Client; close(): Promise<void> }>]> = [
    ...LIBRARIES.map((library): (typeof resendCases)[number] => [
      `a redis:// URL over ${named(library)}`,
      async (proxy, ns) => {
        const client = await connect(using(proxy.url(ns), library))
        return { client, close: () => client.close() }
      },
    ]),
    [
      "a user's node-redis client (offline queue on, RESP3)",
      async (proxy, ns) => {
        const user = await userClient('redis', proxy.port)
        const client = new Client(await redisAdapter({ client: user.client, namespace: ns }))
        return { client, close: async () => (await client.close(), await user.close()) }
      },
    ],
  ]
  test.each(resendCases)('a commit whose answer was lost with the connection is resent on reconnect and applied once: %s', async (_name, open) => {
    const ns = fresh()
    const proxy = await new TcpProxy(server.port).start()
    const { client, close } = await open(proxy, ns)
    const observer = await redisAdapter({ url: server.url(ns) })
    await client.put('warm-up', 1)
    proxy.holdReplies()
    // Applied by Redis; the answer never arrives, then the connection drops and the commit is sent again (by ioredis, or by the adapter's link over node-redis).
    const acquiring = client.locks.acquire('lock:once', { autoRenew: false })
    await until(async () => (await observer.get('lock:once')) !== undefined)
    proxy.cut()
    const lock = await acquiring
    // Sent twice, applied once: the second run answered the first one's result, so the lock is ours.
    expect(lock).not.toBeNull()
    const entry = (await observer.get('lock:once'))!
    expect(entry).toMatchObject({ owner: client.id, created: lock!.token, revision: lock!.token })
    const next = await observer.commit([], [{ type: 'set', key: 'after', value: 1 }])
    expect(next.ok && next.revision).toBe(lock!.token + 1)
    await lock!.release()
    await Promise.all([close(), observer.close()])
    await proxy.stop()
  })

  test("a commit's reply names the next deadline exp still holds: after deleting the earliest (or moving it later, or taking its TTL away), the second's; after deleting the two its sweep read, the third's", async () => {
    // Each op as the commit script takes it: type, key, value json, ttl ms ('' none), owner, fresh.
    const after = async (ops: string[][]) => {
      const ns = fresh()
      const a = await redisAdapter({ url: server.url(ns) })
      await a.commit([], [{ type: 'set', key: 'A', value: 1, ttl: 4_000 }, { type: 'set', key: 'B', value: 1, ttl: 7_000 }, { type: 'set', key: 'C', value: 1, ttl: 9_000 }])
      await a.close()
      // The commit script run by hand, so that its reply is read as it comes: {status, now, nextIn (µs), answer}.
      const reply = (await raw.eval(evalText(SCRIPTS.commit), 9, ...namespaceKeys(ns), 10_000, 500, 0, '', 60_000, 0, ops.length, ...ops.flat())) as string[]
      expect(reply[0]).toBe('ok')
      return Number(reply[2]) / 1000
    }
    const between = (ms: number, from: number, to: number) => {
      expect(ms).toBeGreaterThan(from)
      expect(ms).toBeLessThanOrEqual(to)
    }
    const del = (key: string) => ['d', key, '', '', '', '']
    between(await after([del('A')]), 6_000, 7_000)
    between(await after([['s', 'A', '2', '8000', '', ''], del('C')]), 6_000, 7_000)
    between(await after([['s', 'A', '2', '', '', ''], del('C')]), 6_000, 7_000)
    between(await after([del('A'), del('B')]), 8_000, 9_000)
  })

  test('an expiry is one revision and one expire event, however many adapters run expiry timers', async () => {
    const ns = fresh()
    // Distinct ioredis options: separate connections, as separate processes would have.
    const adapters: Adapter[] = await Promise.all([1, 2, 3].map((i) => redisAdapter({ url: server.url(ns), redis: { connectionName: `p${i}` } })))
    const seen = adapters.map(() => [] as WatchEvent[])
    const unwatch = await Promise.all(adapters.map((a, i) => a.watch('x', { event: (e) => seen[i]!.push(e), error: () => {} })))
    const r = await adapters[0]!.commit([], [{ type: 'set', key: 'x', value: 1, ttl: 80 }])
    await until(() => seen.every((s) => s.some((e) => e.type === 'expire')), 3_000)
    await new Promise((resolve) => setTimeout(resolve, 200))
    const after = await adapters[1]!.commit([], [{ type: 'set', key: 'y', value: 1 }])
    for (const s of seen) {
      expect(s.map((e) => [e.type, e.revision])).toEqual([['put', r.ok && r.revision], ['expire', r.ok && r.revision + 1]])
    }
    expect(after.ok && after.revision).toBe(r.ok && r.revision + 2)
    unwatch.forEach((u) => u())
    await Promise.all(adapters.map((a) => a.close()))
  })
})

describe('revisions and the add op', () => {
  const MAX = Number.MAX_SAFE_INTEGER

  test('a store whose revision key reaches Number.MAX_SAFE_INTEGER refuses writes with REVISION_EXHAUSTED; reads go on', async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    await a.commit([], [{ type: 'set', key: 'lock', value: null, ttl: 50, owner: 'o' }])
    await raw.hset(`zaris:{${ns}}:rev`, 'n', String(MAX - 2))
    await new Promise((resolve) => setTimeout(resolve, 80)) // the lock is due: its expiry takes a revision too
    const r1 = await a.commit([], [{ type: 'add', key: 'n', delta: 1 }])
    expect(r1.ok && r1.revision).toBe(MAX) // the due lock expired first, at MAX - 1
    const events: WatchEvent[] = []
    await a.watch('', { event: (e) => events.push(e), error: () => {} }, MAX - 2)
    await expect(a.commit([{ key: 'held', revision: null }], [{ type: 'set', key: 'held', value: null, ttl: 50, owner: 'o' }])).rejects.toMatchObject({ code: 'REVISION_EXHAUSTED' })
    await expect(a.commit([], [{ type: 'set', key: 'b', value: 1 }])).rejects.toMatchObject({ code: 'REVISION_EXHAUSTED', message: expect.stringMatching(/largest safe integer/) })
    await expect(a.commit([], [{ type: 'add', key: 'n', delta: 1 }])).rejects.toMatchObject({ code: 'REVISION_EXHAUSTED' })
    expect(await a.get('b')).toBeUndefined()
    expect((await a.get('n'))?.value).toBe(1)
    expect((await a.position()).revision).toBe(MAX)
    expect(await raw.hget(`zaris:{${ns}}:rev`, 'n')).toBe(String(MAX))
    await until(() => events.length >= 2)
    expect(events.map((e) => [e.type, e.revision])).toEqual([['expire', MAX - 1], ['put', MAX]])
    await a.close()
  })

  test('the last safe revision is given; only the one after it is refused', async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    await a.commit([], [{ type: 'set', key: 'k', value: 0 }])
    await raw.hset(`zaris:{${ns}}:rev`, 'n', String(MAX - 1))
    const last = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    expect(last.ok && last.revision).toBe(MAX)
    await expect(a.commit([], [{ type: 'set', key: 'k', value: 2 }])).rejects.toMatchObject({ code: 'REVISION_EXHAUSTED', message: expect.stringContaining(`at revision ${MAX},`) })
    expect((await a.get('k'))?.value).toBe(1)
    // No revision left: a due entry cannot be expired, so it stays, and reads still see it.
    const stuck = fresh()
    const c = await redisAdapter({ url: server.url(stuck) })
    await c.commit([], [{ type: 'set', key: 'due', value: 1, ttl: 40 }])
    await raw.hset(`zaris:{${stuck}}:rev`, 'n', String(MAX))
    await new Promise((resolve) => setTimeout(resolve, 70))
    expect((await c.get('due'))?.value).toBe(1)
    // Its check that nothing is there fails: the entry still is.
    expect(await c.commit([{ key: 'due', revision: null }], [{ type: 'set', key: 'due', value: 2 }])).toMatchObject({ ok: false })
    await c.close()
    // One script that needs a revision past the last: the expiries it could make stay made, the commit is refused.
    for (const [start, due] of [[MAX - 1, 1], [MAX - 2, 2]] as const) {
      const other = fresh()
      const b = await redisAdapter({ url: server.url(other) })
      for (let i = 0; i < due; i++) await b.commit([], [{ type: 'set', key: `due${i}`, value: 1, ttl: 40 }])
      await raw.hset(`zaris:{${other}}:rev`, 'n', String(start))
      await new Promise((resolve) => setTimeout(resolve, 70))
      await expect(b.commit([], [{ type: 'set', key: 'k', value: 1 }])).rejects.toMatchObject({ code: 'REVISION_EXHAUSTED' })
      expect(await raw.hget(`zaris:{${other}}:rev`, 'n')).toBe(String(MAX))
      expect(await b.get('k')).toBeUndefined()
      expect(await b.get('due0')).toBeUndefined()
      await b.close()
    }
    await a.close()
  })

  test("a revision hash lost while the log stands: the next revision follows the log, and no loss is marked when the client had seen no more than the log holds", async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    for (let i = 0; i < 3; i++) await a.commit([], [{ type: 'set', key: 'k', value: i }])
    await raw.del(`zaris:{${ns}}:rev`)
    const next = await a.commit([], [{ type: 'set', key: 'k', value: 3 }])
    expect(next.ok && next.revision).toBe(4)
    const log = await raw.xrange(`zaris:{${ns}}:log`, '-', '+')
    expect(log.map(([id]) => id)).toEqual(['1-0', '2-0', '3-0', '4-0'])
    expect(log.some(([, fields]) => fields[1] === 'x')).toBe(false)
    // Again, for a client that had seen less than the log holds: nothing it saw was lost either.
    const b = await redisAdapter({ url: server.url(ns) })
    await b.commit([], [{ type: 'set', key: 'b', value: 0 }])
    for (let i = 0; i < 2; i++) await a.commit([], [{ type: 'set', key: 'k', value: 4 + i }])
    await raw.del(`zaris:{${ns}}:rev`)
    const fromB = await b.commit([], [{ type: 'set', key: 'b', value: 1 }])
    expect(fromB.ok && fromB.revision).toBe(8)
    expect((await raw.xrange(`zaris:{${ns}}:log`, '-', '+')).some(([, fields]) => fields[1] === 'x')).toBe(false)
    await Promise.all([a.close(), b.close()])
  })

  test('the counter and the log lost under a client that had seen revision 4: the next revisions rise past it, the loss is marked once, and a watcher is told how far history stands', async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    for (let i = 0; i < 3; i++) await a.commit([], [{ type: 'set', key: 'k', value: i }])
    await a.commit([], [{ type: 'set', key: 'due0', value: 1, ttl: 300 }, { type: 'set', key: 'due1', value: 1, ttl: 300 }])
    const watcher = await redisAdapter({ url: server.url(ns) })
    const errors: Error[] = []
    const unwatch = await watcher.watch('', { event: () => {}, error: (e) => errors.push(e) }, 4)
    await raw.del(`zaris:{${ns}}:rev`, `zaris:{${ns}}:log`)
    // Both come due at once: one script expires them, at 5 (after the loss marker) and 6.
    await until(async () => (await raw.exists(`zaris:{${ns}}:log`)) === 1, 3_000)
    const next = await a.commit([], [{ type: 'set', key: 'k', value: 3 }])
    expect(next.ok && next.revision).toBe(7)
    const log = await raw.xrange(`zaris:{${ns}}:log`, '-', '+')
    expect(log.map(([id, fields]) => [id, fields[1]])).toEqual([['5-0', 'x'], ['5-1', 'e'], ['6-0', 'e'], ['7-0', 'p']])
    expect(log[0]![1].slice(0, 4)).toEqual(['t', 'x', 'a', '0'])
    await until(() => errors.length > 0, 5_000)
    expect(errors[0]).toMatchObject({ code: 'COMPACTED', message: expect.stringContaining('lost the history after revision 0') })
    unwatch()
    await Promise.all([a.close(), watcher.close()])
  })

  test('an add that cannot be made exactly takes no revision and writes no event: watchers never see a gap', async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    await a.commit([], [{ type: 'set', key: 'text', value: 'x' }, { type: 'set', key: 'big', value: MAX }])
    const before = (await a.position()).revision
    await expect(a.commit([], [{ type: 'add', key: 'text', delta: 1 }])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('"text"') })
    await expect(a.commit([], [{ type: 'add', key: 'big', delta: 1 }])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('"big"') })
    expect((await a.position()).revision).toBe(before)
    const next = await a.commit([], [{ type: 'add', key: 'big', delta: -MAX }])
    expect(next.ok && [next.revision, next.entries[0]!.value]).toEqual([before + 1, 0])
    // Exactly the largest safe integer either way is made.
    await a.commit([], [{ type: 'set', key: 'top', value: MAX - 1 }, { type: 'set', key: 'bottom', value: 1 - MAX }])
    const reached = await a.commit([], [{ type: 'add', key: 'top', delta: 1 }, { type: 'add', key: 'bottom', delta: -1 }])
    expect(reached.ok && reached.entries.map((e) => e.value)).toEqual([MAX, -MAX])
    await a.close()
  })

  test('a lone add (the short script) retried with the same requestId is answered, not applied twice', async () => {
    const a = await redisAdapter({ url: server.url(fresh()) })
    const once = await a.commit([], [{ type: 'add', key: 'n', delta: 5 }], { requestId: 'add-retry-0123456789' })
    const again = await a.commit([], [{ type: 'add', key: 'n', delta: 5 }], { requestId: 'add-retry-0123456789' })
    expect(once.ok && once.entries[0]!.value).toBe(5)
    expect(again).toEqual(once)
    expect((await a.get('n'))?.value).toBe(5)
    await a.close()
  })

  test('a lone add and the same add among other ops leave the same entry, events and expiry', async () => {
    const runs = await Promise.all(
      [false, true].map(async (among) => {
        const a = await redisAdapter({ url: server.url(fresh()) })
        const events: WatchEvent[] = []
        await a.watch('', { event: (e) => events.push(e), error: () => {} })
        await a.commit([], [{ type: 'set', key: 'c', value: 1, owner: 'o', ttl: 150 }])
        const others = among ? [{ type: 'delete' as const, key: 'none' }] : []
        const r = await a.commit([], [{ type: 'add', key: 'c', delta: 2 }, ...others])
        const fresh1 = await a.commit([], [{ type: 'add', key: 'd', delta: 3 }, ...others])
        const entry = await a.get('c')
        await until(() => events.some((e) => e.type === 'expire'), 3_000)
        const list = await a.list('')
        await a.close()
        const answer = r.ok ? r.entries.map(({ ttl, ...e }) => ({ ...e, ttl: ttl !== undefined && ttl > 0 && ttl <= 150 })) : r
        return { answer, fresh: fresh1.ok && fresh1.entries, entry: entry && { ...entry, ttl: undefined }, events: events.map(({ ttl, ...e }) => e), keys: list.entries.map((e) => e.key) }
      }),
    )
    expect(runs[0]!.answer).toEqual([{ key: 'c', value: 3, owner: 'o', created: 1, revision: 2, ttl: true }])
    expect(runs[0]!.keys).toEqual(['d'])
    expect(runs[0]).toEqual(runs[1])
  })

  test("a lock's take, renewal and release (the short script) and the same commits through the generic one leave the same answers, entries, events, keys, expiry and request records, as functions and by EVALSHA", async () => {
    const sha = (lua: string) => createHash('sha1').update(lua).digest('hex')
    // Which scripts ran, as Redis saw them: the lock script is `<library>_lock` as a function, LOCK_SCRIPT by EVALSHA or EVAL.
    const monitor = await raw.monitor()
    const seen: string[][] = []
    // MONITOR echoes a command as it was sent: upper or lower case.
    monitor.on('monitor', (_time: string, args: string[]) => seen.push([args[0]!.toLowerCase(), ...args.slice(1)]))
    const lockRan = (from: number) =>
      seen.slice(from).some(([cmd, what]) => (cmd === 'fcall' && what === scriptLibrary().functions.lock) || (cmd === 'evalsha' && what === sha(LOCK_SCRIPT)) || (cmd === 'eval' && what === LOCK_SCRIPT))
    // A reply read at the wrong place would set the watchers' expiry timer to Redis's time (a Node warning).
    const warnings: string[] = []
    const onWarning = (w: Error) => warnings.push(w.name)
    process.on('warning', onWarning)
    await raw.script('FLUSH')
    // A user who may not call functions: every script goes by EVALSHA.
    await raw.call('ACL', 'SETUSER', 'nofcall', 'on', '>pw', '~*', '&*', '+@all', '-fcall')
    const run = async (short: boolean, functions: boolean) => {
      const ns = fresh()
      const a = await redisAdapter({ url: functions ? server.url(ns) : `redis://nofcall:pw@127.0.0.1:${server.port}/0?ns=${ns}` })
      const events: WatchEvent[] = []
      await a.watch('', { event: (e) => events.push(e), error: () => {} })
      // A second check that always holds sends the same commit through the generic script.
      const also: Check[] = short ? [] : [{ key: 'none', revision: null }]
      // TTLs left are read at different moments: compared as present and in range.
      const strip = (r: CommitResult) =>
        r.ok
          ? { ...r, entries: r.entries.map(({ ttl, ...e }) => ({ ...e, ttl: ttl !== undefined && ttl > 0 && ttl <= 60_000 })) }
          : { ok: false, failed: r.failed.map((f) => ({ key: f.key, entry: f.entry && { ...f.entry, ttl: undefined } })) }
      const answers: unknown[] = []
      const take = await a.commit([{ key: 'l', revision: null }, ...also], [{ type: 'set', key: 'l', value: { v: 1 }, ttl: 60_000, owner: 'o' }], { requestId: `take-${ns}-0123456789` })
      answers.push(strip(take))
      const created = take.ok ? take.entries[0]!.created : -1
      answers.push(strip(await a.commit([{ key: 'l', revision: null }, ...also], [{ type: 'set', key: 'l', value: 2, ttl: 60_000, owner: 'p' }])))
      answers.push(strip(await a.commit([{ key: 'l', created }, ...also], [{ type: 'set', key: 'l', value: { v: 1 }, ttl: 30_000, owner: 'o' }])))
      const held = await a.get('l')
      answers.push(strip(await a.commit([{ key: 'l', created: created + 100 }, ...also], [{ type: 'delete', key: 'l' }])))
      answers.push(strip(await a.commit([{ key: 'l', created }, ...also], [{ type: 'delete', key: 'l' }])))
      answers.push(strip(await a.commit([{ key: 'gone', revision: null }, ...also], [{ type: 'delete', key: 'gone' }])))
      answers.push(strip(await a.commit([{ key: 'm', revision: null }, ...also], [{ type: 'set', key: 'm', value: null, ttl: 150, owner: 'o', fresh: true }])))
      const expiry = await raw.zrange(`zaris:{${ns}}:exp`, '0', '-1')
      await until(() => events.some((e) => e.type === 'expire'), 3_000)
      answers.push(strip(await a.commit([{ key: 'n', revision: null }, ...also], [{ type: 'set', key: 'n', value: 'x' }])))
      const record = await raw.hget(`zaris:{${ns}}:req`, `take-${ns}-0123456789`)
      const list = await a.list('')
      await a.close()
      return { answers, held: held && { ...held, ttl: undefined }, events: events.map((e) => ({ ...e })), expiry, record, keys: list.entries.map((e) => e.key) }
    }
    const results = []
    for (const functions of [true, false]) {
      const before = seen.length
      const generic = await run(false, functions)
      expect(lockRan(before)).toBe(false)
      const after = seen.length
      const short = await run(true, functions)
      expect(lockRan(after)).toBe(true)
      expect(short.answers[0]).toEqual({ ok: true, revision: 1, deleted: [], entries: [{ key: 'l', value: { v: 1 }, revision: 1, created: 1, owner: 'o', ttl: true }] })
      expect(short.answers[1]).toMatchObject({ ok: false, failed: [{ key: 'l', entry: { revision: 1 } }] })
      expect(short.answers[4]).toEqual({ ok: true, revision: 3, deleted: ['l'], entries: [] })
      expect(short.events.map((e) => `${e.type} ${e.key} ${e.revision}`)).toEqual(['put l 1', 'put l 2', 'delete l 3', 'put m 5', 'expire m 6', 'put n 7'])
      expect(short.expiry).toEqual(['m'])
      expect(short.keys).toEqual(['n'])
      expect(short.record).toMatch(/^1 1$/)
      expect(short).toEqual(generic)
      results.push(short)
    }
    // The same through functions and by EVALSHA.
    expect(results[0]).toEqual(results[1])
    expect(seen.some(([cmd]) => cmd === 'fcall')).toBe(true)
    expect(seen.some(([cmd]) => cmd === 'evalsha' || cmd === 'eval')).toBe(true)
    monitor.disconnect()
    process.off('warning', onWarning)
    expect(warnings).not.toContain('TimeoutOverflowWarning')
  })

  test("a lock's take (the short script) retried with the same requestId is answered, not applied twice", async () => {
    const a = await redisAdapter({ url: server.url(fresh()) })
    const commit = () => a.commit([{ key: 'l', revision: null }], [{ type: 'set', key: 'l', value: null, ttl: 60_000, owner: 'o' }], { requestId: 'lock-retry-0123456789' })
    const once = await commit()
    const again = await commit()
    expect(once.ok && once.revision).toBe(1)
    expect(again).toEqual(once)
    expect(await a.position()).toMatchObject({ revision: 1 })
    await a.close()
  })

  test("an add keeps an owner's bytes exactly, whatever they are", async () => {
    const ns = fresh()
    const a = await redisAdapter({ url: server.url(ns) })
    const owner = 'tab \u{1F600}:\n x'
    const set = await a.commit([], [{ type: 'set', key: 'c', value: 1, owner, ttl: 60_000 }])
    const r = await a.commit([], [{ type: 'add', key: 'c', delta: 41 }])
    expect(r.ok && r.entries[0]).toMatchObject({ value: 42, owner, created: set.ok && set.revision })
    expect(await a.get('c')).toMatchObject({ value: 42, owner })
    await a.close()
  })
})

describe.each(LIBRARIES)('process lifetime (%s)', (library) => {
  async function runScript(body: string): Promise<{ code: number | null; out: string }> {
    const script = `import { connect } from './src/index.ts'\nconst c = await connect(${JSON.stringify(using(server.url(fresh()), library))})\n${body}`
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        resolve(null)
      }, 15_000)
      child.on('exit', (c) => {
        clearTimeout(timer)
        resolve(c)
      })
    })
    return { code, out }
  }

  test('a process whose client holds and watches nothing exits on its own with the connection open', async () => {
    const { code, out } = await runScript(`
      await c.put('k', 1)
      const w = c.watch('k')
      await w.ready
      w.close()
      console.log('done', (await c.get('k')).value)
    `)
    expect(out).toContain('done 1')
    expect(code).toBe(0)
  }, 30_000)

  test('awaiting close() in an otherwise idle process completes (exit 0, not an unsettled await)', async () => {
    const { code, out } = await runScript(`
      const lock = await c.locks.acquire('lock:a')
      await c.close()
      console.log('closed', lock.held)
    `)
    expect(out).toContain('closed false')
    expect(code).toBe(0)
  }, 30_000)
})
