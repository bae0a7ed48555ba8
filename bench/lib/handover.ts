/**
 * Handover latency: one lock, one holder and a line of waiters, each a client
 * of its own. The holder lets go; the time is from its release call to the
 * next holder's grant. Between handovers the line is let settle (the last
 * holder queues again at the back), so each handover is timed on its own,
 * not in a storm of re-queuing. Also the etcd peer: etcd3's `lock()` with a
 * watch on the key to wait on (etcd3 has no waiting lock of its own).
 *
 * @module
 */
import { EtcdLockFailedError, type Etcd3, type Watcher } from 'etcd3'
import type { LockPeer } from './locks'
import { sleep, type Trial } from './measure'

/** How long a waiter may wait in a handover trial (it is always handed the lock well before). */
const WAIT_MS = 60_000

/**
 * `rounds` handovers among `peers` (peers[0] takes the lock first; the rest
 * wait), `settleMs` apart. Latency: the holder's release call to the next
 * holder's grant. extra.attempts: lock tries during the timed handovers
 * (the take, and the last holder's try before it queues again).
 */
export async function handovers(peers: LockPeer[], key: string, rounds: number, settleMs: number): Promise<Trial> {
  const first = await peers[0]!.acquire(key, WAIT_MS)
  if (!first) throw new Error(`${key}: the first holder could not take it`)
  let release = first
  let holder = 0
  const waiting = new Map<number, Promise<{ index: number; release: () => Promise<unknown> }>>()
  const wait = (index: number) =>
    waiting.set(
      index,
      peers[index]!.acquire(key, WAIT_MS).then((r) => {
        if (!r) throw new Error(`${key}: a waiter gave up`)
        return { index, release: r }
      }),
    )
  for (let i = 1; i < peers.length; i++) wait(i)
  const lat: number[] = []
  const start = performance.now()
  const handOn = async (requeue: boolean) => {
    const t0 = performance.now()
    const released = release()
    const next = await Promise.race(waiting.values())
    const ms = performance.now() - t0
    await released
    waiting.delete(next.index)
    if (requeue) wait(holder)
    holder = next.index
    release = next.release
    return ms
  }
  // Tries are counted over the timed handovers only: not the waiters' first tries, nor the drain below.
  let before = 0
  for (let r = 0; r < rounds; r++) {
    await sleep(settleMs)
    if (r === 0) before = await attempts(peers)
    lat.push(await handOn(true))
  }
  const tries = (await attempts(peers)) - before
  const ms = performance.now() - start
  // The waiters left are handed the lock in turn and let go (untimed), so the trial ends with the lock free.
  while (waiting.size > 0) await handOn(false)
  await release()
  return { ops: lat.length, ms, lat, extra: { handovers: lat.length, attempts: tries } }
}

async function attempts(peers: LockPeer[]): Promise<number> {
  return (await Promise.all(peers.map((p) => p.attempts()))).reduce((a, b) => a + b, 0)
}

/**
 * etcd3's `lock()` (a lease, a put-if-absent on the key, the lease revoked to
 * release), waiting as its users do: a watch on the key, and another try at
 * each delete. The watch is armed before each try, so a delete between a
 * failed try and the wait still wakes it.
 */
export function etcdLockPeer(client: Etcd3, ttlSec = 30): LockPeer {
  let tries = 0
  const watchers = new Map<string, Promise<{ watcher: Watcher; next(): Promise<void> }>>()
  const watchOf = (key: string) => {
    let w = watchers.get(key)
    if (!w) {
      w = client
        .watch()
        .key(key)
        .create()
        .then((watcher) => {
          let wake: () => void = () => {}
          let armed = new Promise<void>((resolve) => (wake = resolve))
          watcher.on('delete', () => {
            wake()
            armed = new Promise<void>((resolve) => (wake = resolve))
          })
          return { watcher, next: () => armed }
        })
      watchers.set(key, w)
    }
    return w
  }
  return {
    async acquire(key, waitMs) {
      const until = performance.now() + waitMs
      const w = await watchOf(key)
      for (;;) {
        const deleted = w.next()
        tries++
        const lock = client.lock(key).ttl(ttlSec)
        try {
          await lock.acquire()
          return () => lock.release()
        } catch (err) {
          if (!(err instanceof EtcdLockFailedError)) throw err
        }
        const left = until - performance.now()
        if (left <= 0) return null
        await Promise.race([deleted, sleep(left)])
      }
    },
    attempts: async () => tries,
    close: async () => {
      for (const w of watchers.values()) await (await w).watcher.cancel()
      watchers.clear()
    },
  }
}
