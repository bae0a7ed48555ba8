/**
 * Auto-renewal keeps its cadence over a slow store: a renewal is sent a third
 * of the TTL after the previous write was sent, not after its answer came
 * back, so a round trip (a loaded node, a far one) does not stretch every
 * period by itself. A wrapper around the real memory adapter answers each
 * commit `LATENCY` ms (ManualClock time) after applying it — a fake slow
 * transport, named as such.
 */
import { expect, test } from 'vitest'
import { Client, type Adapter } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { ManualClock } from 'zaris/testing'
import { lateAnswers } from './late-answers'

const LATENCY = 200

/** The memory adapter, answering late; records when each `set` of a key was sent, with its TTL. */
function slowAnswers(inner: Adapter, clock: ManualClock) {
  const sets = new Map<string, Array<{ at: number; ttl: number }>>()
  const adapter = lateAnswers(inner, clock, LATENCY, (_checks, ops) => {
    for (const op of ops) if (op.type === 'set' && op.ttl !== undefined) (sets.get(op.key) ?? sets.set(op.key, []).get(op.key)!).push({ at: clock.now(), ttl: op.ttl })
  })
  return { adapter, sets }
}

/** Gaps between consecutive sends of the same key's writes. */
const gaps = (sends: Array<{ at: number }>) => sends.slice(1).map((s, i) => s.at - sends[i]!.at)

test('fake slow transport: a held lock renews every ttl / 3 from send to send, however late the answers come', async () => {
  const clock = new ManualClock()
  const { adapter, sets } = slowAnswers(memoryAdapter({ namespace: `cadence-${Math.random()}`, clock }), clock)
  const client = new Client(adapter, { clock })
  const acquiring = client.locks.acquire('lock:x', { ttl: 3_000 })
  await clock.advance(LATENCY)
  const lock = (await acquiring)!
  await clock.advance(10_000)
  expect(lock.held).toBe(true)
  const sends = sets.get('lock:x')!
  expect(sends.length).toBeGreaterThanOrEqual(10) // the acquire, then one renewal a second
  expect(gaps(sends)).toEqual(sends.slice(1).map(() => 1_000))
  const releasing = lock.release()
  await clock.advance(LATENCY)
  expect(await releasing).toBe(true)
  await client.close()
})

test("fake slow transport: a waiter's kept entry (its place in the line) renews every ttl / 3 from send to send", async () => {
  const clock = new ManualClock()
  const ns = `cadence-${Math.random()}`
  const holder = new Client(memoryAdapter({ namespace: ns, clock }), { clock })
  const { adapter, sets } = slowAnswers(memoryAdapter({ namespace: ns, clock }), clock)
  const waiter = new Client(adapter, { clock })
  const held = (await holder.locks.acquire('lock:y', { ttl: 60_000 }))!
  const waiting = waiter.locks.acquire('lock:y', { ttl: 3_000, wait: 60_000 })
  await clock.advance(20_000)
  const kept = [...sets].filter(([key]) => key !== 'lock:y')
  expect(kept.length).toBeGreaterThan(0)
  for (const [, sends] of kept) {
    expect(sends.length).toBeGreaterThanOrEqual(5)
    for (const [i, gap] of gaps(sends).entries()) expect(gap).toBeCloseTo(sends[i]!.ttl / 3, 6)
  }
  await held.release()
  await clock.advance(LATENCY * 4)
  const lock = (await waiting)!
  expect(lock.token).toBeGreaterThan(held.token)
  const releasing = lock.release()
  await clock.advance(LATENCY)
  await releasing
  await Promise.all([holder.close(), waiter.close()])
})
