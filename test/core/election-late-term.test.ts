/**
 * A term whose winning commit is answered after its TTL has ended before
 * `campaign()` resolves: the election still says `deposed` after `elected`
 * (and a lock taken so is handed over ended, its signal already aborted).
 * The memory adapter answers each commit late (./late-answers: a fake slow
 * transport, named as such).
 */
import { expect, test } from 'vitest'
import { Client } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { ManualClock } from 'zaris/testing'
import { lateAnswers } from './late-answers'

/** An election of candidate `a` (ttl 1 000) on a memory store whose every commit is answered `lateMs` late, and what it told. */
function lateElection(lateMs: number) {
  const clock = new ManualClock()
  const client = new Client(lateAnswers(memoryAdapter({ namespace: `late-${Math.random()}`, clock }), clock, lateMs), { clock })
  const election = client.election('leader', { ttl: 1_000, candidate: 'a' })
  const events: string[] = []
  election.addEventListener('elected', () => events.push('elected'))
  election.addEventListener('deposed', () => events.push('deposed'))
  election.addEventListener('leader', (e) => events.push(`leader ${(e as CustomEvent<{ candidate: string } | null>).detail?.candidate ?? '-'}`))
  return { clock, client, election, events }
}

test('fake slow transport: a term won by a commit answered after its TTL is elected, then deposed', async () => {
  // Its own write comes back before the answer: the term it names has ended by the time it can be told, so nobody is named.
  const { clock, client, election, events } = lateElection(1_500)
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

test('fake slow transport: a term answered after the holder deadline but before the store expires it is never named leader', async () => {
  // ttl 1 000: the holder's deadline is 988 (the drift margin), the store's expiry 1 000; the answer comes at 995.
  const { clock, client, election, events } = lateElection(995)
  const campaigning = election.campaign()
  await clock.advance(995)
  const term = (await campaigning)!
  expect(term.held).toBe(false)
  expect((await client.get('leader'))?.created).toBe(term.token) // the store still holds it
  expect(election.leader).toBeUndefined()
  await clock.advance(10)
  expect(events.filter((e) => e === 'leader a')).toEqual([])
  expect(events.filter((e) => e !== 'leader -')).toEqual(['elected', 'deposed'])
  await client.close()
})
