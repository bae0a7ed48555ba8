/**
 * Semaphore contenders behind the lock contenders' interface (locks.ts), so
 * the one-client and contention runs do the same steps for each: zaris's
 * `semaphores.acquire` through any adapter (attempts counted at the
 * adapter), and redis-semaphore's `Semaphore` on the same Redis (attempts
 * counted from the server's script statistics: every acquire try is one
 * script, a release is a plain ZREM — {@link scriptCalls}).
 *
 * @module
 */
import type { Redis } from 'ioredis'
import { Semaphore } from 'redis-semaphore'
import { Client, type Adapter } from 'zaris'
import { countingAdapter } from '../../test/conformance/counting'
import type { LockPeer } from './locks'

/** zaris: a permit of semaphore `key` (the lock key of `acquire`) with `limit`, ttl 30 s, auto-renew. */
export function zarisSemaphorePeer(inner: Adapter, limit: number): LockPeer {
  // A try is a commit that takes a slot (U+0001 p + key + U+0001 + n) only if it is free.
  const counted = countingAdapter(inner, (key) => key.startsWith('\u0001p'))
  const client = new Client(counted.adapter)
  return {
    async acquire(key, waitMs) {
      const permit = await client.semaphores.acquire(key, { limit, ttl: 30_000, wait: waitMs })
      return permit && (() => permit.release())
    },
    attempts: async () => counted.count(),
    close: () => client.close(),
  }
}

/**
 * redis-semaphore's `Semaphore` (lockTimeout 30 s, refreshed as by default):
 * `tryAcquire()` for one try, `acquire()` with its own retry loop
 * (`retryInterval`) for a wait.
 */
export function redisSemaphorePeer(redis: Redis, limit: number, retryInterval: number): LockPeer {
  return {
    async acquire(key, waitMs) {
      // tryAcquire makes one try, but gives up before it if acquireTimeout has passed: give it time for that one.
      const s = new Semaphore(redis, key, limit, { lockTimeout: 30_000, acquireTimeout: waitMs <= 0 ? 10_000 : waitMs, retryInterval, onLockLost: () => {} })
      const got = waitMs <= 0 ? await s.tryAcquire() : await s.acquire().then(() => true, () => false)
      return got ? () => s.release() : null
    },
    attempts: async () => NaN,
    close: async () => {},
  }
}

/** Scripts run on the server so far (EVAL and EVALSHA), for a peer whose every try is one script and whose release is none. */
export function scriptCalls(redis: Redis): () => Promise<number> {
  return async () => {
    const info = await redis.info('commandstats')
    let calls = 0
    for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1])
    return calls
  }
}
