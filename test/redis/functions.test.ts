/**
 * The Redis adapter runs its scripts as Redis Functions (one library, its
 * helpers built once), loads the library again when Redis lost it, and falls
 * back to EVALSHA where functions cannot be run or loaded. Against a real
 * redis-server; the users without function permissions are real ACL users.
 */
import Redis from 'ioredis'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { Adapter } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { scriptLibrary } from '../../src/adapters/redis/functions'
import { CALL_STATE } from '../../src/adapters/redis/prelude'
import { LIBRARIES, using } from './clients'
import { startRedis, type RedisServer } from './server'

let server: RedisServer
let raw: Redis
beforeAll(async () => {
  server = await startRedis()
  raw = new Redis(server.port, '127.0.0.1')
  // Users who may run everything but functions: one cannot load a library, one cannot call a function.
  await raw.call('ACL', 'SETUSER', 'noload', 'on', '>pw', '~*', '&*', '+@all', '-function')
  await raw.call('ACL', 'SETUSER', 'nofcall', 'on', '>pw', '~*', '&*', '+@all', '-fcall')
})
afterAll(async () => {
  raw?.disconnect()
  await server?.dispose()
})

let n = 0
const fresh = () => `f${++n}-${Math.random().toString(36).slice(2, 8)}`
const urlAs = (user: string, ns: string) => `redis://${user}:pw@127.0.0.1:${server.port}/0?ns=${ns}`

/** Calls of each command since the last reset, from Redis's own statistics. */
async function calls(): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const m of (await raw.info('commandstats')).matchAll(/cmdstat_([\w|]+):calls=(\d+)/g)) out[m[1]!] = Number(m[2])
  return out
}

/** A lock's take and release, a counter's add and a read: every kind of script but list and replay. */
async function cycle(a: Adapter): Promise<void> {
  const take = await a.commit([{ key: 'l', revision: null }], [{ type: 'set', key: 'l', value: null, ttl: 30_000, owner: 'o' }])
  expect(take.ok).toBe(true)
  const created = take.ok ? take.entries[0]!.created : 0
  expect((await a.commit([{ key: 'l', created }], [{ type: 'delete', key: 'l' }])).ok).toBe(true)
  await a.commit([], [{ type: 'add', key: 'n', delta: 1 }])
  expect(await a.get('l')).toBeUndefined()
}

describe.each(LIBRARIES)('Redis Functions (%s)', (library) => {
  const url = (ns: string) => using(server.url(ns), library)
  test('every script runs as a function of one library named by a hash of its text: no EVALSHA', async () => {
    await raw.call('FUNCTION', 'FLUSH')
    await raw.config('RESETSTAT')
    const a = await redisAdapter({ url: url(fresh()) })
    await cycle(a)
    await a.list('')
    await a.close()
    const lib = scriptLibrary()
    expect(lib.name).toMatch(/^zaris_[0-9a-f]{16}$/)
    const listed = (await raw.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'zaris_*')) as unknown[][]
    expect(listed.map((l) => l[1])).toEqual([lib.name])
    const stats = await calls()
    expect(stats['fcall']).toBeGreaterThanOrEqual(5)
    expect(stats['evalsha'] ?? 0).toBe(0)
    expect(stats['eval'] ?? 0).toBe(0)
    expect(stats['function|load']).toBe(1)
  })

  test('calls that find the library gone (FUNCTION FLUSH) load it once and are each applied once', async () => {
    const a = await redisAdapter({ url: url(fresh()) })
    await a.commit([], [{ type: 'add', key: 'n', delta: 1 }])
    await raw.call('FUNCTION', 'FLUSH')
    await raw.config('RESETSTAT')
    // 50 at once: every one is refused "Function not found", one load serves them all, each is sent again.
    await Promise.all(Array.from({ length: 50 }, (_, i) => a.commit([], [{ type: 'add', key: 'n', delta: 1 }], { requestId: `flush-${i}-0123456789` })))
    expect((await a.get('n'))?.value).toBe(51)
    expect((await a.position()).revision).toBe(51)
    const stats = await calls()
    expect(stats['function|load']).toBe(1)
    expect(stats['evalsha'] ?? 0).toBe(0)
    await a.close()
  })

  test('after a restart without persistence the library is loaded again, and revisions do not go back', async () => {
    const a = await redisAdapter({ url: url(fresh()) })
    await cycle(a)
    const before = (await a.position()).revision
    await server.stop()
    await server.start()
    await raw.call('ACL', 'SETUSER', 'noload', 'on', '>pw', '~*', '&*', '+@all', '-function')
    await raw.call('ACL', 'SETUSER', 'nofcall', 'on', '>pw', '~*', '&*', '+@all', '-fcall')
    expect(await raw.call('FUNCTION', 'LIST')).toEqual([])
    const next = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    expect(next.ok && next.revision).toBeGreaterThan(before)
    const listed = (await raw.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'zaris_*')) as unknown[][]
    expect(listed.map((l) => l[1])).toEqual([scriptLibrary().name])
    await a.close()
  })

  for (const user of ['noload', 'nofcall']) {
    test(`a user who may not ${user === 'noload' ? 'load a library' : 'call a function'} gets every script by EVALSHA, with the same answers`, async () => {
      await raw.call('FUNCTION', 'FLUSH')
      const ns = fresh()
      const a = await redisAdapter({ url: using(urlAs(user, ns), library) })
      await raw.config('RESETSTAT')
      await cycle(a)
      expect((await a.get('n'))?.value).toBe(1)
      expect((await a.position()).revision).toBe(3)
      const stats = await calls()
      // (ioredis sends EVAL once for each script Redis did not hold yet)
      expect((stats['evalsha'] ?? 0) + (stats['eval'] ?? 0)).toBeGreaterThanOrEqual(4)
      // The one refusal that showed functions are out; none after it.
      expect((stats['fcall'] ?? 0) + (stats['function|load'] ?? 0)).toBeLessThanOrEqual(1)
      await a.close()
    })
  }

  test("by EVALSHA, a script Redis no longer holds (SCRIPT FLUSH) is run by EVAL, once, and cached again", async () => {
    const a = await redisAdapter({ url: using(urlAs('nofcall', fresh()), library) })
    await cycle(a)
    await raw.call('SCRIPT', 'FLUSH')
    await raw.config('RESETSTAT')
    await a.commit([], [{ type: 'add', key: 'n', delta: 1 }], { requestId: 'noscript-0123456789' })
    await a.commit([], [{ type: 'add', key: 'n', delta: 1 }])
    expect((await a.get('n'))?.value).toBe(3)
    const stats = await calls()
    // The add script: refused once (NOSCRIPT), run by EVAL, then by EVALSHA again; the read's script: refused, then EVAL.
    expect(stats['eval']).toBe(2)
    expect(stats['evalsha']).toBe(3)
    await a.close()
  })

  test('a Redis without FCALL and FUNCTION (as Redis 6, or a proxy without them: renamed away here) gets every script by EVALSHA', async () => {
    const old = await startRedis({ args: ['--rename-command', 'FCALL', '', '--rename-command', 'FUNCTION', ''] })
    try {
      const a = await redisAdapter({ url: using(old.url(fresh()), library) })
      await cycle(a)
      expect((await a.get('n'))?.value).toBe(1)
      await a.close()
      const direct = new Redis(old.port, '127.0.0.1')
      const stats = (await direct.info('commandstats')).match(/cmdstat_(\w+):calls=(\d+)/g)!.join(' ')
      direct.disconnect()
      const scripts = [...stats.matchAll(/cmdstat_(?:eval|evalsha):calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0)
      expect(scripts).toBeGreaterThanOrEqual(4)
      expect(stats).not.toMatch(/fcall|function/)
    } finally {
      await old.dispose()
    }
  })

  test('an error raised inside a function reaches the caller as it is: no fallback, no second run', async () => {
    await raw.call('FUNCTION', 'FLUSH')
    const ns = fresh()
    const a = await redisAdapter({ url: url(ns) })
    await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    // The log's key made a string: the function's XREVRANGE / XADD fail inside it.
    await raw.del(`zaris:{${ns}}:log`)
    await raw.set(`zaris:{${ns}}:log`, 'not a stream')
    await raw.config('RESETSTAT')
    await expect(a.commit([], [{ type: 'set', key: 'k', value: 2 }])).rejects.toMatchObject({ code: 'INTERNAL', message: expect.stringMatching(/WRONGTYPE.*@user_function/) })
    const stats = await calls()
    expect(stats['fcall']).toBe(1)
    expect(stats['evalsha'] ?? 0).toBe(0)
    await a.close()
  })

  test('another version of zaris on the same Redis keeps its own library: neither replaces the other', async () => {
    await raw.call('FUNCTION', 'FLUSH')
    // An older zaris's library: another hash, the same function names after it.
    const other = scriptLibrary().text.replaceAll(scriptLibrary().name, 'zaris_0123456789abcdef')
    await raw.call('FUNCTION', 'LOAD', other)
    const a = await redisAdapter({ url: url(fresh()) })
    await cycle(a)
    await a.close()
    const listed = ((await raw.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'zaris_*')) as unknown[][]).map((l) => l[1])
    expect(listed.sort()).toEqual(['zaris_0123456789abcdef', scriptLibrary().name].sort())
  })

  test('the library keeps no state between calls: its top-level locals are constants, functions, or reset by init', () => {
    const text = scriptLibrary().text
    // The library's own top level: what comes before the functions (their bodies' locals are theirs).
    const top = text.slice(0, text.indexOf('redis.register_function'))
    const state = new Set(CALL_STATE.flatMap(([names]) => names.split(',').map((s) => s.trim())))
    const constants = new Set(['MAXREV', 'IX', 'UNIX'])
    const stray: string[] = []
    for (const line of top.split('\n')) {
      const m = /^local (?!function\b)([\w, ]+?)(\s*=|$)/.exec(line)
      if (!m) continue
      for (const name of m[1]!.split(',').map((s) => s.trim())) if (!state.has(name) && !constants.has(name)) stray.push(name)
    }
    expect(stray).toEqual([])
    // init assigns every one of them.
    const init = /local function init\(keys, argv\)\n([\s\S]*?)\nend/.exec(text)![1]!
    for (const name of state) expect(init).toMatch(new RegExp(`\\b${name}\\b[^=\\n]*=`))
    // The constants are never assigned after their definition.
    for (const name of constants) expect(text.match(new RegExp(`^\\s*${name}\\s*=`, 'gm'))).toBeNull()
  })
})
