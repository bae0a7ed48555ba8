/**
 * What an election promises, seen from the app: defaults and bad options,
 * terms whose fencing tokens rise, campaign while leading, resign and
 * campaign again, a follower that knows its leader while it waits, your
 * signal and the client's close ending a campaign, a store that refuses, a
 * term kept by renewal, entries that name no candidate, two elections of one
 * client on one name, and close (or dispose) that resigns and stops
 * observing. Memory store; a ManualClock where time matters.
 */
import { afterEach, expect, test } from 'vitest'
import { Client, InvalidArgumentError, UnavailableError, type Adapter, type Election, type Leader } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { ManualClock } from 'zaris/testing'

const open: Client[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()))
})

const ns = () => `elect-${Math.random().toString(36).slice(2)}`

function client(namespace: string, options: { id?: string; ttl?: number; clock?: ManualClock } = {}, adapter?: Adapter): Client {
  const c = new Client(adapter ?? memoryAdapter({ namespace, ...(options.clock ? { clock: options.clock } : {}) }), options)
  open.push(c)
  return c
}

/** Every `leader` event's candidate (`-` for nobody), and `elected` / `deposed`, in order. */
function record(election: Election): string[] {
  const seen: string[] = []
  election.addEventListener('leader', (e) => seen.push(`leader ${(e as CustomEvent<Leader | undefined>).detail?.candidate ?? '-'}`))
  election.addEventListener('elected', () => seen.push('elected'))
  election.addEventListener('deposed', () => seen.push('deposed'))
  return seen
}

test('defaults: the candidate is the client id and the term renews with the client ttl; an option overrides each', async () => {
  const name = ns()
  const c = client(name, { id: 'client-7', ttl: 7_000 })
  const plain = c.election('plain')
  expect(plain.candidate).toBe('client-7')
  expect(plain.name).toBe('plain')
  const term = (await plain.campaign())!
  expect(term.ttl).toBe(7_000)
  expect(plain.leader).toEqual({ candidate: 'client-7', token: term.token })
  const named = c.election('named', { ttl: 3_000, candidate: 'tab-3' })
  expect(named.candidate).toBe('tab-3')
  expect((await named.campaign())!.ttl).toBe(3_000)
  expect((await c.get('named'))?.value).toEqual({ candidate: 'tab-3', client: expect.any(String) })
})

test('a candidate that is not a non-empty string is refused with INVALID_ARGUMENT', () => {
  const c = client(ns())
  for (const candidate of [5, null, {}, '']) {
    let caught: unknown
    try {
      c.election('e', { candidate: candidate as string })
    } catch (err) {
      caught = err
    }
    expect(caught).toBeInstanceOf(InvalidArgumentError)
    expect((caught as InvalidArgumentError).code).toBe('INVALID_ARGUMENT')
  }
})

test('terms: campaign while leading gives the same term; resign, then campaign again wins a new term with a higher token', async () => {
  const c = client(ns(), { id: 'me' })
  const election = c.election('leader')
  const seen = record(election)
  const first = (await election.campaign())!
  expect(await election.campaign()).toBe(first)
  expect(election.term).toBe(first)
  // Resigning lets go at once: before the store has answered, this candidate no longer names itself.
  const resigning = election.resign()
  expect([election.isLeader, election.leader, election.term]).toEqual([false, undefined, undefined])
  expect(await resigning).toBe(true)
  expect(election.isLeader).toBe(false)
  expect(election.term).toBeUndefined()
  expect(election.leader).toBeUndefined()
  expect(first.held).toBe(false)
  expect(await election.resign()).toBe(false)
  const second = (await election.campaign())!
  expect(second).not.toBe(first)
  expect(second.held).toBe(true)
  expect(second.token).toBeGreaterThan(first.token)
  expect(election.term).toBe(second)
  expect(election.leader).toEqual({ candidate: 'me', token: second.token })
  expect(seen).toEqual(['leader me', 'elected', 'leader -', 'deposed', 'leader me', 'elected'])
  // "Nobody" is told as `detail: undefined`, as `leader` says it.
  const details: unknown[] = []
  election.addEventListener('leader', (e) => details.push((e as CustomEvent).detail))
  await election.resign()
  expect(details).toEqual([null]) // a CustomEvent's detail given as undefined reads null
})

test('a follower knows the leader while it waits; resign hands over with a higher token; the old leader names the new one', async () => {
  const name = ns()
  const a = client(name, { id: 'a' }).election('leader')
  const b = client(name, { id: 'b' }).election('leader')
  const termA = (await a.campaign())!
  const bSeen = record(b)
  const bWins = b.campaign()
  await expect.poll(() => b.leader).toEqual({ candidate: 'a', token: termA.token })
  expect(b.isLeader).toBe(false)
  expect(b.term).toBeUndefined()
  // b has not won: it has nothing to resign.
  expect(await b.resign()).toBe(false)
  expect(await a.resign()).toBe(true)
  const termB = (await bWins)!
  expect(termB.token).toBeGreaterThan(termA.token)
  expect(b.isLeader).toBe(true)
  expect(b.leader).toEqual({ candidate: 'b', token: termB.token })
  expect(bSeen.filter((s) => s !== 'leader -')).toEqual(['leader a', 'leader b', 'elected'])
  // a campaigned once: it still watches, and sees b lead.
  await expect.poll(() => a.leader).toEqual({ candidate: 'b', token: termB.token })
  expect(a.isLeader).toBe(false)
})

test('your signal ends a waiting campaign: it rejects with your reason, takes nothing, and the next campaign can still win', async () => {
  const name = ns()
  const a = client(name, { id: 'a' }).election('leader')
  const b = client(name, { id: 'b' }).election('leader')
  await a.campaign()
  const stop = new AbortController()
  const waiting = b.campaign({ signal: stop.signal })
  await expect.poll(() => b.leader?.candidate).toBe('a')
  const reason = new Error('gave up')
  stop.abort(reason)
  await expect(waiting).rejects.toBe(reason)
  expect(b.isLeader).toBe(false)
  // A signal already aborted: rejected at once with its reason.
  const gone = new AbortController()
  gone.abort(new Error('already'))
  await expect(b.campaign({ signal: gone.signal })).rejects.toThrow('already')
  await a.resign()
  const term = (await b.campaign())!
  expect(term.held).toBe(true)
  expect(b.isLeader).toBe(true)
})

test('a signal that aborts after the campaign won leaves the term alone; close ends a campaign waiting with a signal (null)', async () => {
  const name = ns()
  const a = client(name, { id: 'a' }).election('leader')
  const stop = new AbortController()
  const term = (await a.campaign({ signal: stop.signal }))!
  stop.abort(new Error('late'))
  expect(term.held).toBe(true)
  expect(term.signal.aborted).toBe(false)
  expect(a.isLeader).toBe(true)
  const b = client(name, { id: 'b' }).election('leader')
  const waiting = b.campaign({ signal: new AbortController().signal })
  await expect.poll(() => b.leader?.candidate).toBe('a')
  await b.close()
  expect(await waiting).toBeNull()
  expect(a.isLeader).toBe(true)
})

test('a closed client: a waiting campaign resolves null, and a campaign asked after the close resolves null', async () => {
  const name = ns()
  const a = client(name, { id: 'a' }).election('leader')
  await a.campaign()
  const cb = client(name, { id: 'b' })
  const b = cb.election('leader')
  const waiting = b.campaign()
  await expect.poll(() => b.leader?.candidate).toBe('a')
  await cb.close()
  expect(await waiting).toBeNull()
  expect(await b.campaign()).toBeNull()
  // Loaded, and the client closed before this election ever campaigned.
  const cc = client(name, { id: 'c' })
  const c = cc.election('leader')
  const stop = new AbortController()
  const observing = c.observe({ signal: stop.signal })
  expect((await observing.next()).value).toEqual(a.leader)
  stop.abort()
  await cc.close()
  expect(await c.campaign()).toBeNull()
  expect(a.isLeader).toBe(true)
})

test('fake refusing store: a campaign rejects with the store error, not null', async () => {
  const inner = memoryAdapter({ namespace: ns() })
  const refusing: Adapter = {
    ...inner,
    name: 'memory (refuses every commit: fake)',
    commit: async () => {
      throw new UnavailableError('the store is down (fake)')
    },
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    watch: (p, s, f) => inner.watch(p, s, f),
    close: () => inner.close(),
  }
  const election = client('', { id: 'a' }, refusing).election('leader')
  const err = await election.campaign().then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(UnavailableError)
  expect((err as UnavailableError).code).toBe('UNAVAILABLE')
  expect(election.isLeader).toBe(false)
})

test('a term is renewed: long after its TTL the leader still leads with the same token, and was never deposed', async () => {
  const clock = new ManualClock()
  const name = ns()
  const c = client(name, { id: 'a', clock })
  const election = c.election('leader', { ttl: 1_000 })
  const seen = record(election)
  const term = (await election.campaign())!
  for (let i = 0; i < 20; i++) await clock.advance(250)
  expect(term.held).toBe(true)
  expect(election.isLeader).toBe(true)
  expect(election.term?.token).toBe(term.token)
  expect((await c.get('leader'))?.created).toBe(term.token)
  expect(seen).toEqual(['leader a', 'elected'])
})

test('entries that name no candidate are no leader; an entry written as {candidate} is one, once per entry', async () => {
  const name = ns()
  const writer = client(name, { id: 'w' })
  const watcher = client(name, { id: 'o' }).election('leader')
  const told = record(watcher)
  const stop = new AbortController()
  const yielded: Array<Leader | undefined> = []
  const observing = (async () => {
    for await (const leader of watcher.observe({ signal: stop.signal })) yielded.push(leader)
  })().catch(() => {})
  await expect.poll(() => yielded.length).toBe(1)
  const x = await writer.put('leader', { candidate: 'x' })
  await expect.poll(() => watcher.leader?.candidate).toBe('x')
  await writer.put('leader', { candidate: 'x' }) // the same entry again: no change to tell
  await writer.put('leader', { candidate: 'x2' }) // the same entry (token), another candidate: a change
  for (const junk of ['x', ['x'], { candidate: 5 }, null]) {
    await writer.put('leader', junk as never)
    await writer.put('leader', { candidate: 'y' })
  }
  await writer.put('leader', 7)
  await writer.delete('leader') // nobody after nobody: nothing to tell
  await writer.put('leader', { candidate: 'z' })
  await expect.poll(() => watcher.leader?.candidate).toBe('z')
  stop.abort()
  await observing
  expect(watcher.isLeader).toBe(false)
  expect(await watcher.resign()).toBe(false)
  const names = yielded.map((l) => l?.candidate ?? '-')
  expect(names).toEqual(['-', 'x', 'x2', '-', 'y', '-', 'y', '-', 'y', '-', 'y', '-', 'z'])
  expect(yielded[1]).toEqual({ candidate: 'x', token: x.revision })
  expect(yielded[2]).toEqual({ candidate: 'x2', token: x.revision })
  expect(told).toEqual(names.slice(1).map((n) => `leader ${n}`))
})

test('two elections of one client on one name: the second sees the first lead, observes it, and takes over when it resigns', async () => {
  const c = client(ns(), { id: 'tab' })
  const one = c.election('leader', { candidate: 'one' })
  const two = c.election('leader', { candidate: 'two' })
  const termOne = (await one.campaign())!
  const twoWins = two.campaign()
  await expect.poll(() => two.leader).toEqual({ candidate: 'one', token: termOne.token })
  expect(two.isLeader).toBe(false)
  const stop = new AbortController()
  const observing = two.observe({ signal: stop.signal })
  expect((await observing.next()).value).toEqual({ candidate: 'one', token: termOne.token })
  await one.resign()
  const termTwo = (await twoWins)!
  expect(termTwo.token).toBeGreaterThan(termOne.token)
  let next = (await observing.next()).value
  if (next === undefined) next = (await observing.next()).value
  expect(next).toEqual({ candidate: 'two', token: termTwo.token })
  stop.abort()
  await expect.poll(() => one.leader).toEqual({ candidate: 'two', token: termTwo.token })
  expect(one.isLeader).toBe(false)
  expect(two.isLeader).toBe(true)
})

test('the leader observing itself: observe yields its own term while it leads, and nobody after it resigns', async () => {
  const c = client(ns(), { id: 'me' })
  const election = c.election('leader')
  const term = (await election.campaign())!
  const stop = new AbortController()
  const observing = election.observe({ signal: stop.signal })
  expect((await observing.next()).value).toEqual({ candidate: 'me', token: term.token })
  await election.resign()
  expect((await observing.next()).value).toBeUndefined()
  stop.abort()
  expect((await observing.next()).done).toBe(true)
})

test('close resigns (another candidate wins at once) and stops telling: a closed election hears no more leaders', async () => {
  const name = ns()
  const a = client(name, { id: 'a' }).election('leader')
  const b = client(name, { id: 'b' }).election('leader')
  const c = client(name, { id: 'c' }).election('leader')
  await a.campaign()
  const bWins = b.campaign()
  const cWaits = c.campaign()
  await expect.poll(() => c.leader?.candidate).toBe('a')
  await c.close()
  expect(await cWaits).toBeNull()
  const told = record(c)
  await a.close()
  expect(a.isLeader).toBe(false)
  const termB = (await bWins)!
  expect(termB.held).toBe(true)
  await expect.poll(() => a.leader).toBeUndefined()
  expect(c.leader?.candidate).toBe('a')
  expect(told).toEqual([])
  expect(await c.campaign()).toBeNull()
})

test('close after campaigning twice stops every watch it started: the closed election hears no later leader', async () => {
  const name = ns()
  const a = client(name, { id: 'a' }).election('leader')
  await a.campaign()
  await a.resign()
  await a.campaign()
  await a.resign()
  await a.close()
  const told = record(a)
  const term = (await client(name, { id: 'b' }).election('leader').campaign())!
  await client(name, { id: 'c' }).election('leader').observe().next() // the store has told its watchers by now
  expect(term.held).toBe(true)
  expect(told).toEqual([])
  expect(a.leader).toBeUndefined()
})

test('Symbol.asyncDispose closes the election: the leader resigns', async () => {
  const name = ns()
  const a = client(name, { id: 'a' }).election('leader')
  const term = (await a.campaign())!
  await a[Symbol.asyncDispose]()
  expect(term.held).toBe(false)
  expect(a.isLeader).toBe(false)
  expect(await a.campaign()).toBeNull()
  const b = client(name, { id: 'b' }).election('leader')
  expect((await b.campaign())!.token).toBeGreaterThan(term.token)
})

test('observe only: the election loads, leads nothing, and its own isLeader stays false', async () => {
  const c = client(ns(), { id: 'o' })
  const election = c.election('leader')
  const stop = new AbortController()
  const observing = election.observe({ signal: stop.signal })
  expect((await observing.next()).value).toBeUndefined()
  expect(election.isLeader).toBe(false)
  expect(election.term).toBeUndefined()
  expect(await election.resign()).toBe(false)
  stop.abort()
  expect((await observing.next()).done).toBe(true)
  await election.close()
  expect(await election.campaign()).toBeNull()
})

test('observe only: the leader it starts with is `leader` too', async () => {
  const name = ns()
  const a = client(name, { id: 'a' }).election('leader')
  const term = (await a.campaign())!
  const watcher = client(name, { id: 'o' }).election('leader')
  const observing = watcher.observe()
  expect((await observing.next()).value).toEqual({ candidate: 'a', token: term.token })
  expect(watcher.leader).toEqual({ candidate: 'a', token: term.token })
  await observing.return(undefined)
})

test('a plain put over the term deposes the leader, which then names the writer, not nobody', async () => {
  const name = ns()
  const a = client(name, { id: 'a' }).election('leader')
  const seen = record(a)
  const term = (await a.campaign())!
  const deposed = new Promise((r) => a.addEventListener('deposed', r, { once: true }))
  await client(name, { id: 'b' }).put('leader', { candidate: 'b' })
  await deposed
  await expect.poll(() => a.leader?.candidate).toBe('b')
  expect(a.isLeader).toBe(false)
  expect(term.held).toBe(false)
  expect(seen.slice(0, 2)).toEqual(['leader a', 'elected'])
  expect(seen).toContain('deposed')
  expect(seen.at(-1)).toBe('leader b')
})

/**
 * Fake slow read: the memory adapter, whose first read of `key` answers only
 * after another client wrote it twice, so the watch (ready before the read)
 * holds both writes while the read already answers the second.
 */
function lateRead(namespace: string, key: string): Adapter {
  const inner = memoryAdapter({ namespace })
  let fired = false
  return {
    ...inner,
    name: 'memory (first read answers after two writes: fake)',
    async get(k) {
      if (k === key && !fired) {
        fired = true
        const other = new Client(memoryAdapter({ namespace }), { id: 'writer' })
        await other.put(key, { candidate: 'x' })
        await other.put(key, { candidate: 'y' })
        await other.close()
      }
      return inner.get(k)
    },
    commit: (c, o, x) => inner.commit(c, o, x),
    list: (p, o) => inner.list(p, o),
    watch: (p, s, f) => inner.watch(p, s, f),
    close: () => inner.close(),
  }
}

test('fake slow read: observe starts with what the read answered and does not go back to older writes the watch holds', async () => {
  const name = ns()
  const watcher = client('', { id: 'o' }, lateRead(name, 'leader')).election('leader')
  const told = record(watcher)
  const stop = new AbortController()
  const yielded: Array<string | undefined> = []
  const observing = (async () => {
    for await (const leader of watcher.observe({ signal: stop.signal })) yielded.push(leader?.candidate)
  })().catch(() => {})
  await expect.poll(() => yielded.length).toBe(1)
  await client(name, { id: 'z' }).put('leader', { candidate: 'z' })
  await expect.poll(() => yielded.length).toBe(2)
  stop.abort()
  await observing
  expect(yielded).toEqual(['y', 'z'])
  expect(told).toEqual(['leader y', 'leader z'])
})

test('fake slow read: a waiting candidate starts from what the read answered and is not told older writes after it', async () => {
  const name = ns()
  await client(name, { id: 'q' }).put('leader', { candidate: 'q' }) // held by a plain entry: the campaign waits
  const waiter = client('', { id: 'w' }, lateRead(name, 'leader')).election('leader')
  const told = record(waiter)
  const waiting = waiter.campaign()
  await expect.poll(() => waiter.leader?.candidate).toBe('y')
  await client(name, { id: 'z' }).put('leader', { candidate: 'z' })
  await expect.poll(() => waiter.leader?.candidate).toBe('z')
  expect(told).toEqual(['leader y', 'leader z'])
  await waiter.close()
  expect(await waiting).toBeNull()
})

test('three elections of one client on one name: when the first resigns and one of two waiting wins, the first names the winner', async () => {
  const c = client(ns(), { id: 'tab' })
  const [one, two, three] = ['one', 'two', 'three'].map((candidate) => c.election('leader', { candidate }))
  await one!.campaign()
  const waiting = [two!, three!].map((e) => e.campaign().then(() => e))
  await expect.poll(() => two!.leader?.candidate).toBe('one')
  await expect.poll(() => three!.leader?.candidate).toBe('one')
  await one!.resign()
  const winner = await Promise.race(waiting)
  const loser = winner === two ? three! : two!
  const token = winner.term!.token
  await expect.poll(() => one!.leader).toEqual({ candidate: winner.candidate, token })
  await expect.poll(() => loser.leader).toEqual({ candidate: winner.candidate, token })
  expect(loser.isLeader).toBe(false)
  await loser.close()
})

test("campaigns on another name, or by another client, do not hold back what an election says of its client's own ended lease", async () => {
  const clock = new ManualClock()
  const name = ns()
  const c = client(name, { id: 'me', clock })
  await client(name, { id: 'q', clock }).put('blocker', { candidate: 'q' })
  const blocked = c.election('blocker').campaign() // waits as long as the plain entry stays
  const lease = (await c.leases.grant('leader', { ttl: 1_000, value: { candidate: 'old' }, autoRenew: false }))!
  await clock.advance(995) // past the holder's own deadline, before the store's expiry
  expect(lease.held).toBe(false)
  expect((await c.get('leader'))?.value).toEqual({ candidate: 'old' })
  // Another client campaigns on the name meanwhile (it waits for the store to expire the entry): its win could not be this client's.
  const other = client(name, { id: 'other', clock }).election('leader').campaign()
  // This client's entry, no longer held by it: nobody this client can vouch for, told at once.
  const observing = c.election('leader').observe()
  expect((await observing.next()).value).toBeUndefined()
  await observing.return(undefined)
  await c.close()
  expect(await blocked).toBeNull()
  await clock.advance(10)
  expect((await other)?.held).toBe(true)
})

test('fake slow transport (each commit sent 20 ms late): a candidate that first read an empty key still follows later leaders', async () => {
  const name = ns()
  const inner = memoryAdapter({ namespace: name })
  const slow: Adapter = {
    ...inner,
    name: 'memory (commits sent 20 ms late: fake)',
    async commit(checks, ops, options) {
      await new Promise((r) => setTimeout(r, 20))
      return inner.commit(checks, ops, options)
    },
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    watch: (p, s, f) => inner.watch(p, s, f),
    close: () => inner.close(),
  }
  const a = client('', { id: 'a' }, slow).election('leader')
  await a.campaign()
  await a.resign()
  const termB = (await client(name, { id: 'b' }).election('leader').campaign())!
  await expect.poll(() => a.leader).toEqual({ candidate: 'b', token: termB.token })
})
