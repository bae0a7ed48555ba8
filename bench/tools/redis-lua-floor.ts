/**
 * Where an `FCALL` of the Redis adapter's lock function spends Redis's time
 * (issue 31, the semaphore's one-client row): the lock function's take and
 * release (a permit slot's cycle), next to a function that makes the same
 * 14 Redis calls with constant arguments and no logic, and one that makes
 * none, on one redis-server, in turns (7 rounds of 2 500 cycles each; the
 * median round). Redis time from INFO commandstats: `fcall` is the whole
 * call, the calls inside it are counted apart (`inner`).
 *
 *   npx tsx bench/tools/redis-lua-floor.ts
 *
 * @module
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { scriptLibrary } from '../../src/adapters/redis/functions'
import { redis as startRedis } from '../lib/procs'

/** The calls a permit slot's take makes, in its order, with no logic between them. */
const FLOOR = `#!lua name=floor
redis.register_function('floor_calls', function(keys, argv)
  redis.call('TIME')
  redis.call('HGET', keys[6], argv[4])
  redis.call('ZRANGE', keys[4], 0, 1, 'WITHSCORES')
  redis.call('HGET', keys[2], argv[6])
  redis.call('HMGET', keys[1], 'n', 'g', 'p')
  local n = redis.call('HINCRBY', keys[1], 'n', 1)
  redis.call('XADD', keys[5], n .. '-0', 't', 'p', 'k', argv[6], 'v', argv[10], 'c', n, 'o', argv[12], 'l', argv[11], 'g', '1', 'z', '1')
  redis.call('HSET', keys[2], argv[6], n .. ' ' .. n .. ' 1796527266017443 30000 ' .. argv[10] .. '\\n' .. argv[12])
  redis.call('ZADD', keys[3], 0, argv[6])
  redis.call('ZADD', keys[4], 1796527266017443, argv[6])
  redis.call('HSET', keys[6], argv[4], n .. ' ' .. n)
  redis.call('ZADD', keys[7], 1796527236017443, argv[4])
  redis.call('HGET', keys[8], 'tk:' .. argv[6])
  redis.call('HGET', keys[9], argv[6])
  return {'ok', '0', '-1', n .. ' ' .. n}
end)
redis.register_function('floor_none', function(keys, argv) return {'ok', '0', '-1', '1 1'} end)
`

const server = await startRedis()
const conn = new Redis(server.port, '127.0.0.1')
const lib = scriptLibrary()
await conn.call('FUNCTION', 'LOAD', 'REPLACE', lib.text)
await conn.call('FUNCTION', 'LOAD', 'REPLACE', FLOOR)
const KEYS = ['rev', 'data', 'idx', 'exp', 'log', 'req', 'reqt', 'park', 'pkey'].map((k) => `zaris:{one}:${k}`)
const KEY = '\x01ps1\x010'
let rev = 0

/** One take and release of KEY through fn; the revision of each answer is the next call's floor. */
async function cycle(fn: string): Promise<void> {
  const take = (await conn.call('FCALL', fn, 9, ...KEYS, 10000, 500, rev, randomUUID(), 120000, KEY, 'r', '', 's', '{"limit":3}', 30000, `=${randomUUID()}`, '')) as string[]
  if (take[0] !== 'ok') throw new Error(`${fn}: take answered ${JSON.stringify(take)}`)
  rev = Number(take[3]!.split(' ')[0])
  const release = (await conn.call('FCALL', fn, 9, ...KEYS, 10000, 500, rev, randomUUID(), 120000, KEY, 'c', String(rev), 'd', '', '', '', '')) as string[]
  if (release[0] !== 'ok') throw new Error(`${fn}: release answered ${JSON.stringify(release)}`)
  rev = Number(release[3]!.split(' ')[0])
}

/** Redis's microseconds per FCALL, whole and of the calls inside, since the last reset. */
async function perCall(): Promise<{ fcall: number; inner: number }> {
  const stats = [...((await conn.info('commandstats')) as string).matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g)]
  const fcall = stats.find((m) => m[1] === 'fcall')!
  const inner = stats.filter((m) => !['fcall', 'config', 'flushall', 'info'].includes(m[1]!)).reduce((sum, m) => sum + Number(m[3]), 0)
  return { fcall: Number(fcall[3]) / Number(fcall[2]), inner: inner / Number(fcall[2]) }
}

const runs = { lock: lib.functions.lock, floor_calls: 'floor_calls', floor_none: 'floor_none' }
const results = new Map<string, Array<{ fcall: number; inner: number }>>()
for (let round = 0; round < 7; round++) {
  for (const [name, fn] of Object.entries(runs)) {
    await conn.call('FLUSHALL')
    rev = 0
    for (let i = 0; i < 300; i++) await cycle(fn)
    await conn.call('CONFIG', 'RESETSTAT')
    for (let i = 0; i < 2_500; i++) await cycle(fn)
    results.set(name, [...(results.get(name) ?? []), await perCall()])
  }
}
for (const [name, rounds] of results) {
  const m = rounds.sort((a, b) => a.fcall - b.fcall)[3]!
  console.log(`${name.padEnd(12)} ${m.fcall.toFixed(1)} µs an FCALL, ${m.inner.toFixed(1)} of it in the calls inside, ${(m.fcall - m.inner).toFixed(1)} outside them`)
}
conn.disconnect()
await server.dispose()
process.exit(0)
