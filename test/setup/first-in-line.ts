/**
 * Rounds of a contended lock whose first waiter is slow to park again (its
 * answers to waiting commits come `late` ms late: a slow tab or process,
 * simulated by a delay in its adapter), released at a moment of no
 * particular relation to that waiter's parks: the lock must go to the first
 * in line every round (test/memory/turns.test.ts, test/redis/turns.test.ts).
 */
import { expect } from 'vitest'
import { Client, type Adapter } from 'zaris'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** `adapter`, whose answers to waiting commits reach its client `ms` late. */
export function slowAnswers(adapter: Adapter, ms: number): Adapter {
  const commit = adapter.commit.bind(adapter)
  adapter.commit = async (checks, ops, options) => {
    const r = await commit(checks, ops, options)
    if (options?.waitChange) await sleep(ms)
    return r
  }
  return adapter
}

/**
 * `rounds` rounds, each on adapters `open(round)` makes on a store of its
 * own: a holder, a first waiter (TTL 400 ms: it parks 100 ms at a time, its
 * answers 40 ms late), a second waiter; the holder releases; the first gets it.
 */
export async function firstInLineRounds(rounds: number, open: (round: number) => Promise<Adapter>): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    const a = new Client(await open(round), { id: 'holder' })
    const b = new Client(slowAnswers(await open(round), 40), { id: 'first' })
    const c = new Client(await open(round), { id: 'second' })
    try {
      const held = (await a.locks.acquire('k', { ttl: 5_000 }))!
      const first = b.locks.acquire('k', { wait: 10_000, ttl: 400 })
      await sleep(30)
      const second = c.locks.acquire('k', { wait: 10_000, ttl: 400 })
      await sleep(150 + Math.random() * 300)
      await held.release()
      const got = await Promise.race([first.then(() => 'first'), second.then(() => 'second')])
      expect(got, `round ${round}`).toBe('first')
      await (await first)!.release()
      await (await second)!.release()
    } finally {
      await Promise.all([a, b, c].map((x) => x.close()))
    }
  }
}
