/**
 * The remote lock contenders behind one small interface, so that the
 * one-client and the 16-client runs do the same steps for each: zaris through
 * any adapter (attempts counted at the adapter), Redis `SET NX PX` with a Lua
 * release through ioredis, and redlock on the same Redis.
 *
 * @module
 */
import type { Redis } from 'ioredis'
import Redlock from 'redlock'
import { Client, type Adapter } from 'zaris'
import { countingAdapter } from '../../test/conformance/counting'
import { loop, sleep, type Trial } from './measure'

/** A lock contender: takes and frees one named lock. */
export interface LockPeer {
  /** One attempt, or (zaris) a wait of up to `waitMs`; resolves a release function, or null. */
  acquire(key: string, waitMs: number): Promise<(() => Promise<unknown>) | null>
  /** Attempts made so far (commits or SET/EVAL calls that tried to take a lock). */
  attempts(): Promise<number>
  close(): Promise<void>
}

/** zaris on `adapter`: acquire (ttl 30 s, auto-renew) and release. */
export function zarisPeer(inner: Adapter): LockPeer {
  const counted = countingAdapter(inner)
  const client = new Client(counted.adapter)
  return {
    async acquire(key, waitMs) {
      const lock = await client.locks.acquire(key, { ttl: 30_000, wait: waitMs })
      return lock && (() => lock.release())
    },
    attempts: async () => counted.count(),
    close: () => client.close(),
  }
}

const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

/** The usual Redis lock: `SET key token NX PX ttl`, released by a Lua compare-and-delete (EVALSHA). */
export function redisPeer(redis: Redis, retry: { delay: number; jitter: number }): LockPeer {
  const r = redis as Redis & { zarisBenchRelease?: (key: string, token: string) => Promise<number> }
  if (!r.zarisBenchRelease) redis.defineCommand('zarisBenchRelease', { numberOfKeys: 1, lua: RELEASE })
  return setnxPeer(async (key, token) => (await redis.set(key, token, 'PX', 30_000, 'NX')) === 'OK', (key, token) => r.zarisBenchRelease!(key, token), retry)
}

/** A `SET NX` lock: `take` tries once, `release` is the Lua compare-and-delete; a wait retries after `retry`'s delay and jitter. */
function setnxPeer(take: (key: string, token: string) => Promise<boolean>, release: (key: string, token: string) => Promise<unknown>, retry: { delay: number; jitter: number }): LockPeer {
  let attempts = 0
  let n = 0
  return {
    async acquire(key, waitMs) {
      const token = `${process.pid}:${++n}:${Math.random()}`
      const until = performance.now() + waitMs
      for (;;) {
        attempts++
        if (await take(key, token)) return () => release(key, token)
        const left = until - performance.now()
        if (left <= 0) return null
        await sleep(Math.min(left, retry.delay + Math.random() * retry.jitter))
      }
    },
    attempts: async () => attempts,
    close: async () => {},
  }
}

/**
 * redlock (v4) on one Redis: `retryCount` 0 for a single try, or its own
 * retry loop for a wait (it can only retry a number of times, so a wait is
 * "until it gets it"). Its attempts are counted on the server, by
 * {@link scriptAttempts}.
 */
export function redlockPeer(redis: Redis, retry: { delay: number; jitter: number }): LockPeer {
  const once = new Redlock([redis], { retryCount: 0, driftFactor: 0.01 })
  const retrying = new Redlock([redis], { retryCount: -1, retryDelay: retry.delay, retryJitter: retry.jitter, driftFactor: 0.01 })
  once.on('clientError', () => {})
  retrying.on('clientError', () => {})
  return {
    async acquire(key, waitMs) {
      const lock = await (waitMs <= 0 ? once : retrying).lock(key, 30_000).catch(() => null)
      return lock && (() => lock.unlock())
    },
    attempts: async () => NaN,
    close: async () => {},
  }
}

/** Lock attempts made through Lua scripts, from Redis's command statistics: script runs minus one release per success. */
export function scriptAttempts(redis: Redis): (successes: number) => Promise<number> {
  return async (successes) => {
    const info = await redis.info('commandstats')
    let calls = 0
    for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1])
    return calls - successes
  }
}

/** One client: acquire + release back to back. */
export function oneClient(peer: LockPeer, key: string, durationMs: number): Promise<Trial> {
  return loop(async () => {
    const release = await peer.acquire(key, 0)
    if (!release) throw new Error(`${key} was not free`)
    await release()
  }, durationMs)
}

/**
 * `peers.length` clients contend for one lock for `durationMs`: each waits
 * for it, releases at once, and goes again. Latency is each acquire's wait;
 * extra counts successes and attempts.
 */
export async function contention(
  peers: LockPeer[],
  key: string,
  durationMs: number,
  countAttempts: (successes: number) => Promise<number> = async () => (await Promise.all(peers.map((p) => p.attempts()))).reduce((a, b) => a + b, 0),
): Promise<Trial> {
  const before = await countAttempts(0)
  const start = performance.now()
  const end = start + durationMs
  const lat: number[] = []
  let successes = 0
  await Promise.all(
    peers.map(async (peer) => {
      while (performance.now() < end) {
        const t = performance.now()
        const release = await peer.acquire(key, Math.max(1, end - t))
        if (!release) break
        lat.push(performance.now() - t)
        successes++
        await release()
      }
    }),
  )
  const ms = performance.now() - start
  const attempts = (await countAttempts(successes)) - before
  return { ops: successes, ms, lat, extra: { successes, attempts } }
}

/** A node-redis (v5, v6) client, as far as {@link nodeRedisPeer} uses it. */
interface NodeRedisCommands {
  set(key: string, value: string, options: { PX: number; NX: true }): Promise<string | null>
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>
  scriptLoad(script: string): Promise<string>
}

/** {@link redisPeer} over node-redis: `SET key token NX PX ttl`, released by the same Lua compare-and-delete (EVALSHA). */
export function nodeRedisPeer(redis: NodeRedisCommands, retry: { delay: number; jitter: number }): LockPeer {
  const sha = redis.scriptLoad(RELEASE)
  return setnxPeer(
    async (key, token) => (await redis.set(key, token, { PX: 30_000, NX: true })) === 'OK',
    async (key, token) => redis.evalSha(await sha, { keys: [key], arguments: [token] }),
    retry,
  )
}
