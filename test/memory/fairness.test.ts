/**
 * Fairness on the memory store, in one process: clients that each take a
 * lock, release it at once and go again, with nothing in between that
 * yields the event loop, all get their turn. (Found by the
 * contention bench's share column: a release that handed over used to wait
 * a turn of the event loop for its answer, and the new holder, whose whole
 * loop runs in promise jobs, took the lock again and again while the
 * releaser waited: one client had every success.)
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

/** Every client's successes after RUN_MS of acquiring `take` and releasing at once, as multiples of the mean. */
async function shares(adapters: 'one adapter' | 'an adapter each', take: (c: Client) => Promise<{ release(): Promise<boolean> } | null>): Promise<number[]> {
  const namespace = `fair-${Math.random()}`
  const shared = memoryAdapter({ namespace })
  clients = Array.from({ length: CLIENTS }, () => new Client(adapters === 'one adapter' ? shared : memoryAdapter({ namespace })))
  const counts = clients.map(() => 0)
  const end = performance.now() + RUN_MS
  await Promise.all(
    clients.map(async (c, i) => {
      while (performance.now() < end) {
        const held = await take(c)
        if (!held) throw new Error(`client ${i} waited 10 s`)
        counts[i]!++
        await held.release()
      }
    }),
  )
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length
  return counts.map((n) => n / mean)
}

describe.each(['one adapter', 'an adapter each'] as const)('%s, 8 clients in a loop that never yields', (adapters) => {
  test('a lock: every client within 2x of the mean share', async () => {
    const s = await shares(adapters, (c) => c.locks.acquire('fair:lock', { ttl: 30_000, wait: 10_000 }))
    expect(Math.min(...s), s.join(' ')).toBeGreaterThan(0.5)
    expect(Math.max(...s), s.join(' ')).toBeLessThan(2)
  })
})
