/**
 * The parts of the client made on first use (an election's body, made on its
 * first campaign or observe): the facade answers as the whole class did —
 * bad arguments refused at the call, events on the object the app holds,
 * and a close that comes before the body is made still ends what was asked
 * before it. (They once loaded as chunks of their own; a page now loads them
 * with the client, in one request: docs/browser.md.)
 */
import { afterEach, expect, test } from 'vitest'
import { Client, Election, InvalidArgumentError } from 'zaris'
import { memoryAdapter } from 'zaris/memory'

const open: Client[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()))
})

function client(ns: string, id?: string): Client {
  const c = new Client(memoryAdapter({ namespace: ns }), id === undefined ? {} : { id })
  open.push(c)
  return c
}

const ns = () => `lazy-${Math.random().toString(36).slice(2)}`

test('client.election refuses bad arguments at the call, synchronously, with the typed error', () => {
  const c = client(ns())
  expect(() => c.election('')).toThrow(InvalidArgumentError)
  expect(() => c.election('e', { ttl: -1 })).toThrow(/ttl must be a positive/)
  expect(() => c.election('e', { candidate: '' })).toThrow(/candidate must be a non-empty string/)
  expect(() => c.election('e', 'nope' as never)).toThrow(InvalidArgumentError)
})

test('an election closed while its body loads: the campaign asked first resolves null and leaves nothing held', async () => {
  const name = ns()
  const c = client(name)
  const election = c.election('leader')
  const campaign = election.campaign()
  const closed = election.close()
  expect(await campaign).toBeNull()
  await closed
  expect(election.isLeader).toBe(false)
  expect(await c.locks.holder('leader')).toBeUndefined()
  // The key is free: another candidate wins at once.
  const other = client(name).election('leader')
  expect(await other.campaign()).not.toBeNull()
})

test('a candidate closed before it campaigned campaigns no more and writes nothing', async () => {
  const c = client(ns())
  const election = c.election('leader')
  await election.close()
  expect(await election.campaign()).toBeNull()
  expect(await election.resign()).toBe(false)
  expect(await c.get('leader')).toBeUndefined()
})

test('the events of a campaign reach the Election the app holds, listened to before the body loaded', async () => {
  const c = client(ns(), 'me')
  const election = c.election('leader', { candidate: 'tab-1' })
  expect(election).toBeInstanceOf(Election)
  expect([election.isLeader, election.leader, election.term]).toEqual([false, undefined, undefined])
  const seen: string[] = []
  election.addEventListener('elected', () => seen.push('elected'))
  election.addEventListener('leader', (e) => seen.push(`leader ${(e as CustomEvent).detail?.candidate}`))
  election.addEventListener('deposed', () => seen.push('deposed'))
  // Asked twice before the body is there: one campaign, one term.
  const [a, b] = await Promise.all([election.campaign(), election.campaign()])
  expect(a).toBe(b)
  expect(election.isLeader).toBe(true)
  expect(election.term?.token).toBe(a!.token)
  expect(election.leader).toEqual({ candidate: 'tab-1', token: a!.token })
  expect(await election.resign()).toBe(true)
  expect(seen).toEqual(['leader tab-1', 'elected', 'leader undefined', 'deposed'])
})

test('resign while the campaign loads resolves false (nothing won yet), and the campaign goes on to win', async () => {
  const c = client(ns())
  const election = c.election('leader')
  const campaign = election.campaign()
  expect(await election.resign()).toBe(false)
  const term = await campaign
  expect(term?.held).toBe(true)
  expect(election.isLeader).toBe(true)
})

test('observe before any campaign loads the body and reports the leader another client elects', async () => {
  const name = ns()
  const watcher = client(name).election('leader')
  const stop = new AbortController()
  const seen: Array<string | undefined> = []
  const observing = (async () => {
    for await (const leader of watcher.observe({ signal: stop.signal })) {
      seen.push(leader?.candidate)
      if (leader) stop.abort()
    }
  })()
  await expect.poll(() => seen.length).toBe(1)
  await client(name, 'other').election('leader').campaign()
  await observing
  expect(seen).toEqual([undefined, 'other'])
})

test('counters check their arguments before their operations load, and count once loaded', async () => {
  const c = client(ns())
  await expect(c.counters.increment('', 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
  await expect(c.counters.increment('n', 0.5)).rejects.toThrow(/delta must be a safe integer/)
  const [one, two] = await Promise.all([c.counters.increment('n'), c.counters.increment('n', 2)])
  expect(Math.max(one, two)).toBe(3) // in either order, the later one sees both
  expect(await c.counters.get('n')).toBe(3)
})
