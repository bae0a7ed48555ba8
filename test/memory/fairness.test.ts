/**
 * Fairness on the memory store, in one process: clients that each take a
 * lock or a permit, release it at once and go again, with nothing in
 * between that yields the event loop, all get their turn: none starved.
 * (Found by the contention bench's share column. A lock: a release that
 * handed over waited a turn of the event loop for its answer, and the new
 * holder, whose whole loop runs in promise jobs, took the lock again and
 * again while the releaser waited: one client had every success. Three
 * permits: the releaser's next plain try took the freed permit back before
 * any waiter could look, and three of eight clients starved; a permit is now
 * handed to the first waiter in line in the release's step.)
 *
 * @module
 */
import { afterEach, describe, expect, test } from 'vitest'
import { Client } from 'zaris'
import { memoryAdapter } from 'zaris/memory'

const CLIENTS = 8
const RUN_MS = 300

let clients: Client[] = []
afterEach(async () => {
  await Promise.all(clients.map((c) => c.close()))
  clients = []
})

/** What a client takes: its release, or null when the wait ran out. */
type Take = (c: Client, wait: number) => Promise<(() => Promise<boolean>) | null>

/**
 * Every client's successes after RUN_MS of taking with `take` and releasing
 * at once, as multiples of the mean. `take` is an async helper around the
 * acquire, as an app's own code is: the hops it adds decide who gets to a
 * freed permit first when nothing hands it over.
 */
async function shares(adapters: 'one adapter' | 'an adapter each', take: Take): Promise<number[]> {
  const namespace = `fair-${Math.random()}`
  const shared = memoryAdapter({ namespace })
  clients = Array.from({ length: CLIENTS }, () => new Client(adapters === 'one adapter' ? shared : memoryAdapter({ namespace })))
  const counts = clients.map(() => 0)
  const end = performance.now() + RUN_MS
  await Promise.all(
    clients.map(async (c, i) => {
      while (performance.now() < end) {
        const release = await take(c, Math.max(1, end - performance.now()))
        if (!release) break
        counts[i]!++
        await release()
      }
    }),
  )
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length
  return counts.map((n) => n / mean)
}

describe.each(['one adapter', 'an adapter each'] as const)('%s, 8 clients in a loop that never yields', (adapters) => {
  test('a lock: no client starved (each gets a quarter of the mean share or more)', async () => {
    const s = await shares(adapters, async (c, wait) => {
      const lock = await c.locks.acquire('fair:lock', { ttl: 30_000, wait })
      return lock && (() => lock.release())
    })
    expect(Math.min(...s), s.join(' ')).toBeGreaterThan(0.25)
    expect(Math.max(...s), s.join(' ')).toBeLessThan(4)
  })

  // A permit freed goes to the first waiter in line in the release's step (permits handed over): before, the
  // releaser's next plain try took it back before any waiter could look, and waiters starved.
  test.each([1, 3])('a semaphore of %i permit(s): no client starved', async (limit) => {
    const s = await shares(adapters, async (c, wait) => {
      const permit = await c.semaphores.acquire('fair:sem', { limit, ttl: 30_000, wait })
      return permit && (() => permit.release())
    })
    expect(Math.min(...s), s.join(' ')).toBeGreaterThan(0.25)
    expect(Math.max(...s), s.join(' ')).toBeLessThan(4)
  })
})
