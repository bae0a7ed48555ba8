/**
 * What a hold promises beyond the steal and loss cases of
 * hold-ends.test.ts: a hold that has ended answers false by itself (it asks
 * the store nothing, so it answers even when the store is down), and a
 * renewal sets the deadline from the moment it was sent, with the TTL it
 * was given; a store whose clock runs ahead and expires the entry first
 * ends the hold as EXPIRED, from its expire event. On the memory store with a ManualClock, so deadlines are exact;
 * an adapter that can be made unreachable (a fake fault, named so) stands in
 * for a store that is down.
 */
import { expect, test } from 'vitest'
import { Client, type Adapter, type Clock } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { ManualClock } from 'zaris/testing'

let n = 0
function setup() {
  const clock = new ManualClock()
  const ns = `hold-details-${++n}-${Math.random().toString(36).slice(2)}`
  const inner = memoryAdapter({ namespace: ns, clock })
  let down = false
  const adapter: Adapter = {
    name: 'memory (unreachable on demand: a fake fault)',
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    watch: (p, s, f) => inner.watch(p, s, f),
    close: () => inner.close(),
    commit: (c, o, opt) => (down ? Promise.reject(new Error('store unreachable (fake)')) : inner.commit(c, o, opt)),
  }
  const holder = new Client(adapter, { id: 'holder', clock })
  const other = new Client(memoryAdapter({ namespace: ns, clock }), { id: 'other', clock })
  return { clock, holder, other, setDown: (v: boolean) => (down = v), close: () => Promise.all([holder.close(), other.close()]) }
}

test('renew of a released hold resolves false by itself, even with the store unreachable', async () => {
  const { holder, setDown, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  expect(await lock.release()).toBe(true)
  setDown(true)
  expect(await lock.renew()).toBe(false)
  expect((lock.signal.reason as { code: string }).code).toBe('RELEASED')
  setDown(false)
  await close()
})

test('renew of a hold past its own deadline resolves false and writes nothing: the entry lives out its store TTL', async () => {
  const { clock, holder, other, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 1_000, autoRenew: false }))!
  await clock.advance(999) // past the holder's deadline (its TTL less the drift margin), not the store's
  expect(lock.held).toBe(false)
  expect((lock.signal.reason as { code: string }).code).toBe('EXPIRED')
  expect(await lock.renew(10_000)).toBe(false)
  // Still the old entry with what is left of its old TTL: the late renew neither extended it nor took it away.
  const entry = await other.get('lock:a')
  expect(entry).toMatchObject({ created: lock.token, owner: 'holder' })
  expect(entry!.ttl).toBeLessThanOrEqual(1)
  await close()
})

test('a renewal sent at the same clock reading as the acquire still sets the deadline from its own TTL', async () => {
  const { clock, holder, other, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 1_000, autoRenew: false }))!
  expect(await lock.renew(10_000)).toBe(true) // no time has passed on the ManualClock
  expect(lock.ttl).toBe(10_000)
  expect(lock.revision).toBe((await other.get('lock:a'))!.revision) // the renewal's write, which the holder knows of
  await clock.advance(5_000)
  expect(lock.held).toBe(true)
  expect(lock.remaining).toBeGreaterThan(4_000)
  expect(await other.locks.holder('lock:a')).toMatchObject({ owner: 'holder', token: lock.token })
  await clock.advance(5_000)
  expect(lock.held).toBe(false)
  await close()
})

test('a store whose clock runs ahead expires the entry before the holder\'s deadline: the watched hold ends EXPIRED from the expire event', async () => {
  const storeClock = new ManualClock()
  const holderClock = new ManualClock()
  const ns = `hold-details-expire-${Math.random().toString(36).slice(2)}`
  const holder = new Client(memoryAdapter({ namespace: ns, clock: storeClock }), { id: 'holder', clock: holderClock })
  const lock = (await holder.locks.acquire('lock:a', { ttl: 1_000, autoRenew: false }))!
  const ended = new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }))
  await new Promise((resolve) => setTimeout(resolve, 10)) // the watch is established
  await storeClock.advance(1_000) // the store's TTL ran out; the holder's clock has not moved
  await ended
  expect(lock.held).toBe(false)
  expect((lock.signal.reason as { code: string }).code).toBe('EXPIRED')
  await holder.close()
})

test('an auto-renewal that finds the store unreachable tries again within a tenth of the TTL, so one failed try does not cost the hold', async () => {
  const { clock, holder, other, setDown, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 1_200 }))! // renews at 400 ms; deadline about 1 186 ms
  setDown(true)
  await clock.advance(400) // the renewal fails
  expect(lock.held).toBe(true)
  setDown(false)
  await clock.advance(150) // the retry, at a tenth of the TTL (120 ms), succeeds
  await clock.advance(800) // past the first deadline
  expect(lock.held).toBe(true)
  expect(await other.locks.holder('lock:a')).toMatchObject({ owner: 'holder', token: lock.token })
  await close()
})

test('a deadline timer that fires early (as Node\'s may, rounding to whole ms) looks again: the signal aborts at the deadline, not at the next read of held', async () => {
  const clock = new ManualClock()
  // A fake clock, named so: timers of more than 5 ms fire 5 ms before they are due, readings are the ManualClock's.
  const early: Clock = { now: () => clock.now(), setTimeout: (fn, ms) => clock.setTimeout(fn, ms > 5 ? ms - 5 : ms), clearTimeout: (h) => clock.clearTimeout(h) }
  const holder = new Client(memoryAdapter({ namespace: `hold-details-early-${Math.random().toString(36).slice(2)}`, clock }), { id: 'holder', clock: early })
  const lock = (await holder.locks.acquire('lock:a', { ttl: 1_000, autoRenew: false }))!
  let abortedAt: number | undefined
  lock.signal.addEventListener('abort', () => (abortedAt = clock.now()), { once: true })
  await clock.advance(990) // its deadline (the TTL less the drift margin: 988 ms) has passed, the store's TTL not yet
  expect(abortedAt).toBe(988)
  await holder.close()
})

test('release after the holder\'s deadline resolves false, yet frees the entry the store still keeps for it', async () => {
  const { clock, holder, other, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 1_000, autoRenew: false }))!
  await clock.advance(990) // past the holder's deadline (988 ms), not the store's TTL
  expect(lock.held).toBe(false)
  expect(await other.get('lock:a')).toMatchObject({ created: lock.token })
  expect(await lock.release()).toBe(false)
  expect(await other.get('lock:a')).toBeUndefined()
  expect((lock.signal.reason as { code: string }).code).toBe('EXPIRED')
  await close()
})

test('release of an ended hold resolves false with the store unreachable; release of a held one rejects and ends it RELEASED', async () => {
  const { clock, holder, setDown, close } = setup()
  const ended = (await holder.locks.acquire('lock:ended', { ttl: 1_000, autoRenew: false }))!
  await clock.advance(990) // past its deadline
  const held = (await holder.locks.acquire('lock:held', { ttl: 5_000, autoRenew: false }))!
  setDown(true)
  expect(await ended.release()).toBe(false)
  expect((ended.signal.reason as { code: string }).code).toBe('EXPIRED')
  await expect(held.release()).rejects.toThrow('store unreachable (fake)')
  expect(held.held).toBe(false)
  expect((held.signal.reason as { code: string }).code).toBe('RELEASED')
  setDown(false)
  await close()
})

/** The memory adapter with commit answers held while `hold()` is on (a fake delay, named so); the store applies the commit at once. */
function answersHeld(ns: string, clock: ManualClock) {
  const inner = memoryAdapter({ namespace: ns, clock })
  let answers: Promise<void> | undefined
  let open: () => void = () => {}
  const adapter: Adapter = {
    name: 'memory (answers held on demand: a fake delay)',
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    watch: (p, s, f) => inner.watch(p, s, f),
    close: () => inner.close(),
    async commit(c, o, opt) {
      const wait = answers // the gate at the time of the call
      const r = await inner.commit(c, o, opt)
      await wait
      return r
    },
  }
  return {
    adapter,
    /** Holds the answers of the commits made from now on until `release`; returns what lets this batch through alone. */
    hold: () => {
      let openThis!: () => void
      answers = new Promise((resolve) => (open = openThis = resolve))
      return openThis
    },
    /** Commits made from now on answer at once; those held stay held. */
    pass: () => (answers = undefined),
    /** Lets the held answers through; later commits answer at once. */
    release: () => {
      answers = undefined
      open()
    },
  }
}

test('a watched hold whose renewal answer is late learns of the renewal from its own event: still held, and its revision is the renewal\'s', async () => {
  const clock = new ManualClock()
  const ns = `hold-details-late-${Math.random().toString(36).slice(2)}`
  const { adapter, hold, release } = answersHeld(ns, clock)
  const holder = new Client(adapter, { id: 'holder', clock })
  const other = new Client(memoryAdapter({ namespace: ns, clock }), { id: 'other', clock })
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  void lock.signal
  await new Promise((resolve) => setTimeout(resolve, 10)) // the watch is established
  hold()
  const renewing = lock.renew()
  await new Promise((resolve) => setTimeout(resolve, 20)) // applied; its event is delivered, its answer held
  const entry = (await other.get('lock:a'))!
  expect(entry.revision).toBeGreaterThan(lock.token)
  expect(lock.held).toBe(true)
  expect(lock.revision).toBe(entry.revision)
  release()
  expect(await renewing).toBe(true)
  expect(lock.held).toBe(true)
  await Promise.all([holder.close(), other.close()])
})

test('a watched shared hold whose watches fail looks at its keys: its share and its group still carry it, so it stays held', async () => {
  const ns = `hold-details-shared-${Math.random().toString(36).slice(2)}`
  const inner = memoryAdapter({ namespace: ns })
  let watchFails: 'error' | 'reject' = 'error'
  const adapter: Adapter = {
    name: 'memory (watches fail: a fake fault)',
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    commit: (c, o, opt) => inner.commit(c, o, opt),
    close: () => inner.close(),
    async watch(_prefix, sink) {
      if (watchFails === 'reject') throw new Error('watch refused (fake)')
      queueMicrotask(() => sink.error(new Error('stream reset (fake)')))
      return () => {}
    },
  }
  const holder = new Client(adapter, { id: 'holder' })
  const other = new Client(memoryAdapter({ namespace: ns }), { id: 'other' })
  // Another client opens the group, so the holder's share is younger than the group's life.
  await other.locks.acquire('lock:s', { mode: 'shared', ttl: 10_000, autoRenew: false })
  const shared = (await holder.locks.acquire('lock:s', { mode: 'shared', ttl: 10_000, autoRenew: false }))!
  void shared.signal
  await new Promise((resolve) => setTimeout(resolve, 50))
  expect(shared.held).toBe(true) // it looked, found its share and its group, and stays
  // A watch that cannot even start (its promise rejects) is a failed watch too: the hold looks, and sees the steal.
  watchFails = 'reject'
  const lock = (await holder.locks.acquire('lock:x', { ttl: 10_000, autoRenew: false }))!
  await other.locks.acquire('lock:x', { steal: true, autoRenew: false })
  void lock.signal
  await new Promise((resolve) => setTimeout(resolve, 50))
  expect(lock.held).toBe(false)
  expect((lock.signal.reason as { code: string }).code).toBe('STOLEN')
  await Promise.all([holder.close(), other.close()])
})

test('a plain { key, token } fence (a token handed to another process) is checked like the hold itself: accepted while held, FENCED once stolen', async () => {
  const { holder, other, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  const fence = { key: lock.key, token: lock.token }
  await other.put('data', 'by the token', { fence })
  expect((await other.get('data'))?.value).toBe('by the token')
  await other.locks.acquire('lock:a', { steal: true, autoRenew: false })
  await expect(other.put('data', 'stale', { fence })).rejects.toMatchObject({ code: 'FENCED' })
  await expect(other.delete('data', { fence })).rejects.toMatchObject({ code: 'FENCED' })
  expect((await other.get('data'))?.value).toBe('by the token')
  await close()
})

test('a fenced write refused for its own condition (ifRevision), not for the fence, is a CONFLICT and leaves the hold alone', async () => {
  const { holder, other, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  await holder.put('data', 'v1', { fence: lock })
  const stale = (await other.get('data'))!.revision
  await other.put('data', 'v2')
  await expect(holder.put('data', 'x', { fence: lock, ifRevision: stale })).rejects.toMatchObject({ code: 'CONFLICT' })
  expect(lock.held).toBe(true)
  expect(await lock.renew()).toBe(true)
  expect(await other.locks.holder('lock:a')).toMatchObject({ owner: 'holder', token: lock.token })
  await close()
})

test('a renewal applied with a long TTL whose answer comes after the holder\'s deadline frees the entry it extended; a release in flight past the deadline still ends RELEASED', async () => {
  const clock = new ManualClock()
  const ns = `hold-details-deadline-${Math.random().toString(36).slice(2)}`
  const { adapter, hold, release } = answersHeld(ns, clock)
  const holder = new Client(adapter, { id: 'holder', clock })
  const other = new Client(memoryAdapter({ namespace: ns, clock }), { id: 'other', clock })
  const lock = (await holder.locks.acquire('lock:a', { ttl: 1_000, autoRenew: false }))!
  hold()
  const renewing = lock.renew(60_000) // applied at once: the store keeps the entry for a minute
  await clock.advance(990) // the holder's deadline passes before the answer
  expect(lock.held).toBe(false)
  release()
  expect(await renewing).toBe(false)
  await clock.advance(0)
  expect(await other.get('lock:a')).toBeUndefined() // nobody holds a lock nobody knows of

  const second = (await holder.locks.acquire('lock:b', { ttl: 1_000, autoRenew: false }))!
  hold()
  const releasing = second.release()
  await clock.advance(990) // past its deadline while the release's answer is on its way
  expect(second.held).toBe(false)
  release()
  expect(await releasing).toBe(true)
  expect((second.signal.reason as { code: string }).code).toBe('RELEASED')
  await Promise.all([holder.close(), other.close()])
})

test('a hold\'s signal is one signal: a listener added before any other read hears the end', async () => {
  const { holder, other, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  expect(lock.mode).toBe('exclusive') // the default
  const first = lock.signal
  let heard: unknown
  first.addEventListener('abort', () => (heard = first.reason), { once: true })
  expect(lock.signal).toBe(first)
  await other.locks.acquire('lock:a', { steal: true, autoRenew: false })
  expect(await lock.renew()).toBe(false)
  expect((heard as { code: string }).code).toBe('STOLEN')
  await close()
})

test('a lease hands back the value it was granted with', async () => {
  const { holder, close } = setup()
  const lease = (await holder.leases.grant('lease:a', { ttl: 5_000, autoRenew: false, value: { name: 'tab 1' } }))!
  expect(lease.value).toEqual({ name: 'tab 1' })
  await close()
})

test('renewals answered out of order: the one sent last sets the deadline, as the store applied it last', async () => {
  const clock = new ManualClock()
  const ns = `hold-details-order-${Math.random().toString(36).slice(2)}`
  const { adapter, hold, pass } = answersHeld(ns, clock)
  const holder = new Client(adapter, { id: 'holder', clock })
  const lock = (await holder.locks.acquire('lock:a', { ttl: 1_000, autoRenew: false }))!
  const openLong = hold()
  const long = lock.renew(5_000) // applied at once, its answer held
  pass()
  await clock.advance(10)
  const slow = lock.renew(1_000) // applied after it, answered at once
  expect(await slow).toBe(true)
  openLong()
  expect(await long).toBe(true)
  // The store applied the 1 s renewal last (at 10 ms): it expires the entry at 1 010 ms, so the holder must not count on more.
  await clock.advance(1_000)
  expect(lock.held).toBe(false)
  await holder.close()
})

/**
 * The memory adapter with commits applied late: a commit made while `hold()` is on waits for that batch's
 * `open` (or `fail`: it rejects, as an unreachable store) before the store applies it (a fake delay, named so).
 */
function appliedLate(ns: string, clock: ManualClock) {
  const inner = memoryAdapter({ namespace: ns, clock })
  let gate: Promise<void> | undefined
  const adapter: Adapter = {
    name: 'memory (commits applied late on demand: a fake delay)',
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    watch: (p, s, f) => inner.watch(p, s, f),
    close: () => inner.close(),
    async commit(c, o, opt) {
      await gate // the gate at the time of the call
      return inner.commit(c, o, opt)
    },
  }
  return {
    adapter,
    /** Holds the commits made from now on (until `pass`); returns what lets this batch be applied, or fail. */
    hold: () => {
      let open!: () => void
      let fail!: () => void
      gate = new Promise<void>((resolve, reject) => ((open = resolve), (fail = () => reject(new Error('store unreachable (fake)')))))
      gate.catch(() => {})
      return { open, fail }
    },
    /** Commits made from now on are applied at once; those held stay held. */
    pass: () => (gate = undefined),
  }
}

const code = (hold: { signal: AbortSignal }) => (hold.signal.reason as { code: string } | undefined)?.code

test('an entry gone when a renewal sent in time is refused reads EXPIRED from the holder\'s deadline on (exactly), LOST before it', async () => {
  const storeClock = new ManualClock()
  const readings = new ManualClock()
  // A fake clock, named so: readings move by hand, timers never fire (a holder whose event loop is busy, so its deadline timer is late).
  const busy: Clock = { now: () => readings.now(), setTimeout: () => ({}), clearTimeout: () => {} }
  const ns = `hold-details-due-${Math.random().toString(36).slice(2)}`
  const { adapter, hold } = appliedLate(ns, storeClock)
  const holder = new Client(adapter, { id: 'holder', clock: busy })
  const early = (await holder.locks.acquire('lock:early', { ttl: 1_000, autoRenew: false }))!
  const due = (await holder.locks.acquire('lock:due', { ttl: 1_000, autoRenew: false }))!
  const renewEarly = hold()
  const earlyRenewing = early.renew() // both sent at 0, before the holder's deadline (988 ms)
  const renewDue = hold()
  const dueRenewing = due.renew()
  await storeClock.advance(1_000) // the store's TTL ran out: both entries are gone
  await readings.advance(987) // a moment before the holder's deadline: the store lost it early
  renewEarly.open()
  expect(await earlyRenewing).toBe(false)
  expect(code(early)).toBe('LOST')
  await readings.advance(1) // exactly the holder's deadline: an expiry the holder counted on
  renewDue.open()
  expect(await dueRenewing).toBe(false)
  expect(code(due)).toBe('EXPIRED')
  await holder.close()
})

test('a hold that expired at its deadline keeps that reason when a renewal sent before it is refused later for a steal', async () => {
  const clock = new ManualClock()
  const ns = `hold-details-first-${Math.random().toString(36).slice(2)}`
  const { adapter, hold, pass } = appliedLate(ns, clock)
  const holder = new Client(adapter, { id: 'holder', clock })
  const other = new Client(memoryAdapter({ namespace: ns, clock }), { id: 'other', clock })
  const lock = (await holder.locks.acquire('lock:a', { ttl: 1_000, autoRenew: false }))!
  const renewal = hold()
  const renewing = lock.renew()
  pass()
  await clock.advance(990) // the holder's deadline (988 ms) passed: EXPIRED; the store keeps the entry until 1 000 ms
  expect(lock.held).toBe(false)
  await other.locks.acquire('lock:a', { steal: true, autoRenew: false })
  renewal.open() // refused: the key carries the thief's life now
  expect(await renewing).toBe(false)
  expect(code(lock)).toBe('EXPIRED') // what the holder was told first, not what the late answer found
  await Promise.all([holder.close(), other.close()])
})

test('a second release while the first is in flight resolves false once the first has ended the hold, with its reason', async () => {
  const clock = new ManualClock()
  const ns = `hold-details-twice-${Math.random().toString(36).slice(2)}`
  const { adapter, hold, pass, release } = answersHeld(ns, clock)
  const holder = new Client(adapter, { id: 'holder', clock })
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  hold()
  const first = lock.release() // applied at once, its answer held
  pass()
  const second = lock.release().then((answer) => ({ answer, reason: code(lock) }))
  await new Promise((resolve) => setTimeout(resolve, 10))
  release()
  expect(await first).toBe(true)
  expect(await second).toEqual({ answer: false, reason: 'RELEASED' })
  await holder.close()
})

test('a fenced write refused while the hold\'s own release is in flight leaves the reason to the release: RELEASED', async () => {
  const clock = new ManualClock()
  const ns = `hold-details-fence-release-${Math.random().toString(36).slice(2)}`
  const { adapter, hold, pass, release } = answersHeld(ns, clock)
  const holder = new Client(adapter, { id: 'holder', clock })
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  hold()
  const releasing = lock.release() // the store deleted the entry; the answer is on its way
  pass()
  await expect(holder.put('data', 'late', { fence: lock })).rejects.toMatchObject({ code: 'FENCED' })
  release()
  expect(await releasing).toBe(true)
  expect(code(lock)).toBe('RELEASED')
  await holder.close()
})

test('a plain fence with a stale ifRevision: a CONFLICT while the key carries the token, FENCED once it does not (both checks failed)', async () => {
  const { holder, other, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  const fence = { key: lock.key, token: lock.token }
  await other.put('data', 'v1')
  const stale = (await other.get('data'))!.revision
  await other.put('data', 'v2')
  await expect(other.put('data', 'x', { fence, ifRevision: stale })).rejects.toMatchObject({ code: 'CONFLICT' })
  await other.locks.acquire('lock:a', { steal: true, autoRenew: false })
  await expect(other.put('data', 'x', { fence, ifRevision: stale })).rejects.toMatchObject({ code: 'FENCED' })
  expect((await other.get('data'))?.value).toBe('v2')
  await close()
})

test('the last shared holder, whose renewal is answered after its deadline, frees its share and ends the group: the lock is free', async () => {
  const clock = new ManualClock()
  const ns = `hold-details-shared-late-${Math.random().toString(36).slice(2)}`
  const { adapter, hold, release } = answersHeld(ns, clock)
  const holder = new Client(adapter, { id: 'holder', clock })
  const other = new Client(memoryAdapter({ namespace: ns, clock }), { id: 'other', clock })
  const shared = (await holder.locks.acquire('lock:s', { mode: 'shared', ttl: 1_000, autoRenew: false }))!
  hold()
  const renewing = shared.renew(60_000) // applied at once: the store keeps the share for a minute
  await clock.advance(990) // the holder's deadline passes before the answer
  expect(shared.held).toBe(false)
  release()
  expect(await renewing).toBe(false)
  await clock.advance(0)
  expect(await other.get('lock:s')).toBeUndefined() // no group left behind
  const lock = await other.locks.acquire('lock:s', { ttl: 1_000, autoRenew: false })
  expect(lock?.mode).toBe('exclusive')
  await Promise.all([holder.close(), other.close()])
})

test('a watched hold sees its own release\'s delete before the answer: still RELEASED, not LOST', async () => {
  const clock = new ManualClock()
  const ns = `hold-details-own-delete-${Math.random().toString(36).slice(2)}`
  const { adapter, hold, release } = answersHeld(ns, clock)
  const holder = new Client(adapter, { id: 'holder', clock })
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  void lock.signal
  await new Promise((resolve) => setTimeout(resolve, 10)) // the watch is established
  hold()
  const releasing = lock.release()
  await new Promise((resolve) => setTimeout(resolve, 20)) // applied; its delete event is delivered, its answer held
  release()
  expect(await releasing).toBe(true)
  expect(code(lock)).toBe('RELEASED')
  await holder.close()
})

test('a hold whose watch broke learns its renewal\'s revision from the look at its key while the renewal\'s answer is late', async () => {
  const clock = new ManualClock()
  const ns = `hold-details-look-${Math.random().toString(36).slice(2)}`
  const late = answersHeld(ns, clock)
  const adapter: Adapter = {
    ...late.adapter,
    name: 'memory (answers held on demand, watches break: fakes)',
    async watch(_prefix, sink) {
      queueMicrotask(() => sink.error(new Error('stream reset (fake)')))
      return () => {}
    },
  }
  const holder = new Client(adapter, { id: 'holder', clock })
  const other = new Client(memoryAdapter({ namespace: ns, clock }), { id: 'other', clock })
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  late.hold()
  const renewing = lock.renew() // applied at once, its answer held
  await new Promise((resolve) => setTimeout(resolve, 10))
  void lock.signal // the watch breaks at once: the hold looks at its key
  await new Promise((resolve) => setTimeout(resolve, 20))
  const entry = (await other.get('lock:a'))!
  expect(entry.revision).toBeGreaterThan(lock.token)
  expect(lock.held).toBe(true)
  expect(lock.revision).toBe(entry.revision)
  late.release()
  expect(await renewing).toBe(true)
  await Promise.all([holder.close(), other.close()])
})

test('a watched hold that learns of a steal from its event keeps the revision of its own last write, not the thief\'s', async () => {
  const { holder, other, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  expect(await lock.renew()).toBe(true)
  const own = lock.revision
  const ended = new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }))
  await new Promise((resolve) => setTimeout(resolve, 10)) // the watch is established
  const thief = (await other.locks.acquire('lock:a', { steal: true, autoRenew: false }))!
  await ended
  expect(code(lock)).toBe('STOLEN')
  expect(thief.revision).toBeGreaterThan(own)
  expect(lock.revision).toBe(own)
  await close()
})
