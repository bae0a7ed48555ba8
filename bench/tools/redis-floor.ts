/**
 * The least a lock cycle can cost on Redis under zaris's contract (issue 16,
 * FINDINGS §24), measured piece by piece on a redis-server of its own:
 *
 * - the wire: `PING`, `EVALSHA` of `return 1` with the lock script's keys and arguments;
 * - what one `redis.call` costs inside a script (100 `HGET`s of a small hash per script);
 * - the helpers' cost: `return 1` after zaris's prelude and commit parts (closures built per call);
 * - hand-written floor scripts, no helpers, positional arguments, a take and a release
 *   each doing exactly the writes the contract asks (new revision, entry, key index,
 *   expiry index, the event in the log, the request record): 12 calls a commit as
 *   zaris's layout stands; the same without the request record (9); and on a merged
 *   layout where the entry, the counter, the epoch and the request record share one
 *   hash (8 calls: one read, one write of that hash);
 * - zaris's generic commit script and its lock script by `EVALSHA`, `adapter.commit`,
 *   `client.locks`, and redlock.
 *
 * The steps take turns in rounds so load from elsewhere falls on all alike.
 *
 *   npx tsx bench/tools/redis-floor.ts [cycles=2000]
 *
 * @module
 */
import { Redis } from 'ioredis'
import { Client } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { namespaceKeys } from '../../src/adapters/redis/codec'
import { COMMIT_PARTS, PRELUDE } from '../../src/adapters/redis/prelude'
import { COMMIT, evalText, LOCK } from '../../src/adapters/redis/scripts'
import { median } from '../lib/measure'
import { redis as startRedis } from '../lib/procs'
import { takeTurns } from './redis-profile'

const N = Number(process.argv[2] ?? 2000)
const ROUNDS = 10
const server = await startRedis()
const r = new Redis({ host: '127.0.0.1', port: server.port })
const admin = new Redis({ host: '127.0.0.1', port: server.port })

/** The floor take: check the key free, new revision, event, entry, key index, expiry index, request record. */
const FLOOR_TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local req = ARGV[1]
local kept = redis.call('HGET', KEYS[6], req)
if kept then return kept end
local head = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
local key = ARGV[2]
if redis.call('HGET', KEYS[2], key) then return 'held' end
local rv = redis.call('HMGET', KEYS[1], 'n', 'g')
local rev = tonumber(rv[1] or '0') + 1
local srev = string.format('%d', rev)
redis.call('HSET', KEYS[1], 'n', srev)
redis.call('XADD', KEYS[5], 'MINID', '~', '1', srev .. '-0', 't', 'p', 'k', key, 'v', 'null', 'c', srev, 'o', ARGV[3], 'l', ARGV[4], 'g', rv[2] or '1', 'z', '1')
local deadline = string.format('%d', now + tonumber(ARGV[4]) * 1000)
redis.call('HSET', KEYS[2], key, srev .. ' ' .. srev .. ' ' .. deadline .. ' ' .. ARGV[4] .. ' null\\n' .. ARGV[3])
redis.call('ZADD', KEYS[3], 0, key)
redis.call('ZADD', KEYS[4], deadline, key)
local text = srev .. ' ' .. srev
redis.call('HSET', KEYS[6], req, text)
redis.call('ZADD', KEYS[7], string.format('%d', now), req)
return text
`

/** The floor release: check the key's created, new revision, event, entry, key and deadline gone, request record. */
const FLOOR_RELEASE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local req = ARGV[1]
local kept = redis.call('HGET', KEYS[6], req)
if kept then return kept end
local head = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
local key = ARGV[2]
local raw = redis.call('HGET', KEYS[2], key)
if not raw or string.match(raw, '^%d+ (%d+)') ~= ARGV[3] then return 'lost' end
local rv = redis.call('HMGET', KEYS[1], 'n', 'g')
local rev = tonumber(rv[1] or '0') + 1
local srev = string.format('%d', rev)
redis.call('HSET', KEYS[1], 'n', srev)
redis.call('XADD', KEYS[5], 'MINID', '~', '1', srev .. '-0', 't', 'd', 'k', key, 'g', rv[2] or '1', 'z', '1')
redis.call('HDEL', KEYS[2], key)
redis.call('ZREM', KEYS[3], key)
redis.call('ZREM', KEYS[4], key)
redis.call('HSET', KEYS[6], req, srev)
redis.call('ZADD', KEYS[7], string.format('%d', now), req)
return srev
`

/** The floor scripts without the request record (what it costs: 3 calls). */
const noRecord = (lua: string) => lua.replace(/local kept = .*\n.*\n/, '').replace(/redis\.call\('HSET', KEYS\[6\].*\n.*\n/, '')

/** A merged layout: entry, counter, epoch and request records in one hash; one read and one write of it. */
const MERGED_TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local req, key = ARGV[1], ARGV[2]
local h = redis.call('HMGET', KEYS[2], key, '\\0n', '\\0g', '\\0r' .. req)
if h[4] then return h[4] end
local head = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
if h[1] then return 'held' end
local srev = string.format('%d', tonumber(h[2] or '0') + 1)
redis.call('XADD', KEYS[5], 'MINID', '~', '1', srev .. '-0', 't', 'p', 'k', key, 'v', 'null', 'c', srev, 'o', ARGV[3], 'l', ARGV[4], 'g', h[3] or '1', 'z', '1')
local deadline = string.format('%d', now + tonumber(ARGV[4]) * 1000)
local text = srev .. ' ' .. srev
redis.call('HSET', KEYS[2], key, srev .. ' ' .. srev .. ' ' .. deadline .. ' ' .. ARGV[4] .. ' null\\n' .. ARGV[3], '\\0n', srev, '\\0r' .. req, text)
redis.call('ZADD', KEYS[3], 0, key)
redis.call('ZADD', KEYS[4], deadline, key)
redis.call('ZADD', KEYS[7], string.format('%d', now), req)
return text
`
const MERGED_RELEASE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local req, key = ARGV[1], ARGV[2]
local h = redis.call('HMGET', KEYS[2], key, '\\0n', '\\0g', '\\0r' .. req)
if h[4] then return h[4] end
local head = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
if not h[1] or string.match(h[1], '^%d+ (%d+)') ~= ARGV[3] then return 'lost' end
local srev = string.format('%d', tonumber(h[2] or '0') + 1)
redis.call('XADD', KEYS[5], 'MINID', '~', '1', srev .. '-0', 't', 'd', 'k', key, 'g', h[3] or '1', 'z', '1')
redis.call('HDEL', KEYS[2], key)
redis.call('HSET', KEYS[2], '\\0n', srev, '\\0r' .. req, srev)
redis.call('ZREM', KEYS[3], key)
redis.call('ZREM', KEYS[4], key)
redis.call('ZADD', KEYS[7], string.format('%d', now), req)
return srev
`

type Fn = (...a: Array<string | number>) => Promise<unknown>
const define = (name: string, lua: string, keys = 7): Fn => {
  r.defineCommand(name, { numberOfKeys: keys, lua })
  const f = (r as unknown as Record<string, Fn>)[name]!
  return (...a) => f.call(r, ...a)
}

/** Redis time of the commands the client sent (a script's own calls are inside it), and the calls scripts made, from INFO commandstats since the last RESETSTAT. */
async function serverSince(): Promise<{ usec: number; calls: number; inner: number }> {
  const info = await admin.info('commandstats')
  let usec = 0
  let calls = 0
  let inner = 0
  for (const m of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+),usec=(\d+),/g)) {
    if (m[1]!.startsWith('config') || m[1] === 'info') continue
    if (m[1] === 'evalsha' || m[1] === 'eval' || m[1] === 'set' || m[1] === 'ping') {
      usec += Number(m[3])
      calls += Number(m[2])
    } else inner += Number(m[2])
  }
  return { usec, calls, inner }
}

try {
  const keys = namespaceKeys('fl')
  const bare0 = define('flBare0', 'return 1', 0)
  const bare7 = define('flBare7', 'return 1')
  const helpers = define('flHelpers', `${PRELUDE}${COMMIT_PARTS}\nreturn 1`)
  await r.hset('fl:h', 'a', '1', 'b', '2')
  const hgets = define('flHgets', "for i = 1, 100 do redis.call('HGET', KEYS[1], 'a') end return 1", 1)
  const lockArgs = [10_000, 500, 0, 'req-0123456789abcdef', 120_000, 'x', 'r', '', 's', 'null', '30000', '=cbd0e903-4415-469e-bba0-ff0c921ebfe6', '']

  const take = define('flTake', FLOOR_TAKE)
  const release = define('flRelease', FLOOR_RELEASE)
  const take0 = define('flTake0', noRecord(FLOOR_TAKE))
  const release0 = define('flRelease0', noRecord(FLOOR_RELEASE))
  const mtake = define('flMTake', MERGED_TAKE)
  const mrelease = define('flMRelease', MERGED_RELEASE)
  const owner = 'cbd0e903-4415-469e-bba0-ff0c921ebfe6'
  let q = 0
  const floorCycle = (t: Fn, rl: Fn, ns: string) => async () => {
    const k = namespaceKeys(ns)
    const a = String(await t(...k, `q${++q}`, 'x', owner, '30000'))
    const created = a.split(' ')[1]
    if (created === undefined) throw new Error(`floor take: ${a}`)
    const b = String(await rl(...k, `q${++q}`, 'x', created))
    if (b === 'lost') throw new Error('floor release lost')
  }

  const zlock = define('flLock', evalText(LOCK))
  const zlockCycle = async () => {
    const a = (await zlock(...namespaceKeys('zl'), 10_000, 500, 0, `z${++q}`, 120_000, 'x', 'r', '', 's', 'null', '30000', '=' + owner, '')) as unknown[]
    if (a[0] !== 'ok') throw new Error(`lock script take: ${String(a[0])}`)
    const b = (await zlock(...namespaceKeys('zl'), 10_000, 500, 0, `z${++q}`, 120_000, 'x', 'c', String(a[3]).split(' ')[1]!, 'd', '', '', '', '')) as unknown[]
    if (b[0] !== 'ok') throw new Error(`lock script release: ${String(b[0])}`)
  }

  const zcommit = define('flCommit', evalText(COMMIT))
  const zcommitCycle = async () => {
    const a = (await zcommit(...namespaceKeys('zc'), 10_000, 500, 0, `z${++q}`, 120_000, 1, 'x', 'r', '', 1, 's', 'x', 'null', '30000', '=' + owner, '')) as unknown[]
    if (a[0] !== 'ok') throw new Error(`commit script take: ${String(a[0])}`)
    const b = (await zcommit(...namespaceKeys('zc'), 10_000, 500, 0, `z${++q}`, 120_000, 1, 'x', 'c', String(a[3]).split(' ')[1]!, 1, 'd', 'x', '', '', '', '')) as unknown[]
    if (b[0] !== 'ok') throw new Error(`commit script release: ${String(b[0])}`)
  }

  const adapter = await redisAdapter({ client: r, namespace: 'fa' })
  const commitCycle = async () => {
    const res = await adapter.commit([{ key: 'x', revision: null }], [{ type: 'set', key: 'x', value: null, ttl: 30_000, owner }])
    if (!res.ok) throw new Error('not free')
    await adapter.commit([{ key: 'x', created: res.entries[0]!.created }], [{ type: 'delete', key: 'x' }])
  }
  const client = new Client(adapter)
  const clientCycle = async () => {
    const lock = await client.locks.acquire('y', { ttl: 30_000, wait: 0 })
    if (!lock) throw new Error('not free')
    await lock.release()
  }
  r.defineCommand('flRl', { numberOfKeys: 1, lua: "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end" })
  const rl = (r as unknown as Record<string, Fn>).flRl!
  let tokens = 0
  const redlockCycle = async () => {
    const token = `t${++tokens}:${Math.random()}`
    if ((await r.set('fl:lock', token, 'PX', 30_000, 'NX')) !== 'OK') throw new Error('not free')
    await rl.call(r, 'fl:lock', token)
  }

  const steps: Array<[string, () => Promise<unknown>]> = [
    ['PING', () => r.ping()],
    ['EVALSHA return 1, no keys', () => bare0()],
    ['EVALSHA return 1, 7 keys + 13 args', () => bare7(...keys, ...lockArgs)],
    ['EVALSHA prelude + commit parts, return 1', () => helpers(...keys, ...lockArgs)],
    ['EVALSHA 100 x HGET', () => hgets('fl:h')],
    ['redlock cycle', redlockCycle],
    ['floor cycle, 12 calls a commit', floorCycle(take, release, 'f1')],
    ['floor cycle, no request record (9)', floorCycle(take0, release0, 'f2')],
    ['floor cycle, merged hash (8)', floorCycle(mtake, mrelease, 'f3')],
    ['zaris commit script by EVALSHA, cycle', zcommitCycle],
    ['zaris lock script by EVALSHA, cycle', zlockCycle],
    ['adapter.commit cycle', commitCycle],
    ['client.locks cycle', clientCycle],
  ]
  const srv = steps.map(() => ({ usec: 0, calls: 0, inner: 0 }))
  for (const [, op] of steps) for (let i = 0; i < 200; i++) await op()
  // Client latency and Redis time in the same turns, so load falls on every step alike.
  const lat = await takeTurns(steps.map(([, op]) => op), N, ROUNDS, {
    before: () => admin.config('RESETSTAT'),
    after: async (j) => {
      const st = await serverSince()
      srv[j]!.usec += st.usec
      srv[j]!.calls += st.calls
      srv[j]!.inner += st.inner
    },
  })
  console.log(`redis-server ${server.port}; ${N} operations per step in ${ROUNDS} rounds; load ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  for (let j = 0; j < steps.length; j++) {
    const st = srv[j]!
    console.log(
      `${steps[j]![0].padEnd(44)} p50 ${median(lat[j]!).toFixed(0).padStart(4)} µs; Redis ${(st.usec / N).toFixed(1)} µs per op: ${(st.calls / N).toFixed(0)} commands of ${(st.usec / st.calls).toFixed(1)} µs, making ${(st.inner / st.calls).toFixed(1)} calls each`,
    )
  }
  await client.close()
} finally {
  r.disconnect()
  admin.disconnect()
  await server.dispose()
}
