/**
 * A term whose winning commit is answered after its TTL has ended before
 * `campaign()` resolves: the election still says `deposed` after `elected`
 * (and a lock taken so is handed over ended, its signal already aborted).
 * A wrapper around the real memory adapter answers each commit late —
 * a fake slow transport, named as such.
 */
import { expect, test } from 'vitest'
import { Client, type Adapter } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { ManualClock } from 'zaris/testing'

/** The memory adapter, answering `latency` ms (ManualClock time) after applying each commit. */
function lateAnswers(inner: Adapter, clock: ManualClock, latency: number): Adapter {
  return {
    ...inner,
    name: `memory (answers ${latency} ms late: fake)`,
    async commit(checks, ops, options) {
      const result = await inner.commit(checks, ops, options)
      await new Promise<void>((resolve) => clock.setTimeout(resolve, latency))
      return result
    },
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    watch: (p, s, f) => inner.watch(p, s, f),
    close: () => inner.close(),
  }
}

test('fake slow transport: a term won by a commit answered after its TTL is elected, then deposed', async () => {
  const clock = new ManualClock()
  const client = new Client(lateAnswers(memoryAdapter({ namespace: `late-${Math.random()}`, clock }), clock, 1_500), { clock })
  const election = client.election('leader', { ttl: 1_000, candidate: 'a' })
  const events: string[] = []
  election.addEventListener('elected', () => events.push('elected'))
  election.addEventListener('deposed', () => events.push('deposed'))
  const campaigning = election.campaign()
  await clock.advance(1_500)
  const term = (await campaigning)!
  await clock.advance(10)
  expect(term.held).toBe(false)
  expect(term.signal.aborted).toBe(true)
  expect(events).toEqual(['elected', 'deposed'])
  expect(election.isLeader).toBe(false)
  await client.close()
})
