/**
 * What a hold leaves behind once it is over: no timer on its client's clock
 * (in a browser nothing unrefs them; a renewal left scheduled would write
 * again) and no watch open on the store (every one is a stream a node keeps
 * for it), however often `signal` was read and whatever ended it. And while
 * it lives, one watch of its key, not one per read of `signal`.
 *
 * The store runs on its own ManualClock, so the holder's clock counts only
 * the holder's timers. The adapters here wrap the memory store to count the
 * watches it has open, to make watches fail, or to hold a read (fakes of a
 * store's faults and delays, named so in their `name`).
 */
import { expect, test } from 'vitest'
import { Client, type Adapter, type Clock, type Unsubscribe, type WatchSink } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { ManualClock } from 'zaris/testing'
import { countedWatches } from './machine-kit'

/** Lets the memory store's watch deliveries and the holder's reactions run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 20))

const code = (hold: { signal: AbortSignal }) => (hold.signal.reason as { code: string } | undefined)?.code

interface Faults {
  /** How watches of the store behave: `work`, or fail (`error`: the stream breaks after it started; `reject`: it never starts). */
  watches: 'work' | 'error' | 'reject'
  /** A gate that watches wait for before they start (a slow stream set-up). */
  starts: Promise<void> | undefined
  /** A gate that reads wait for (a read held on its way). */
  reads: Promise<void> | undefined
  /** A gate that commits wait for before the store applies them; rejecting it makes them fail as an unreachable store. */
  commits: Promise<void> | undefined
}

function setup() {
  const storeClock = new ManualClock()
  const clock = new ManualClock()
  const ns = `hold-cleanup-${Math.random().toString(36).slice(2)}`
  const inner = memoryAdapter({ namespace: ns, clock: storeClock })
  const faults: Faults = { watches: 'work', starts: undefined, reads: undefined, commits: undefined }
  const counted = countedWatches(inner)
  const adapter: Adapter = {
    name: 'memory (watches counted, failing, reads and commits held on demand: fakes)',
    async get(k) {
      await faults.reads
      return inner.get(k)
    },
    list: (p, o) => inner.list(p, o),
    close: () => inner.close(),
    async commit(c, o, opt) {
      await faults.commits
      return inner.commit(c, o, opt)
    },
    async watch(prefix: string, sink: WatchSink, from?: number): Promise<Unsubscribe> {
      await faults.starts
      if (faults.watches === 'reject') throw new Error('watch refused (fake)')
      if (faults.watches === 'error') {
        queueMicrotask(() => sink.error(new Error('stream reset (fake)')))
        return () => {}
      }
      return counted.watch(prefix, sink, from)
    },
  }
  const holder = new Client(adapter, { id: 'holder', clock })
  const other = new Client(memoryAdapter({ namespace: ns, clock: storeClock }), { id: 'other', clock: storeClock })
  return {
    clock,
    storeClock,
    faults,
    holder,
    other,
    watches: () => counted.open(),
    close: () => Promise.all([holder.close(), other.close()]),
  }
}

/** A gate and what opens it (or fails it). */
function gate() {
  let open!: () => void
  let fail!: () => void
  const p = new Promise<void>((resolve, reject) => ((open = resolve), (fail = () => reject(new Error('store unreachable (fake)')))))
  p.catch(() => {})
  return { p, open, fail }
}

test('a renewing hold renewed by hand as well, then released, leaves no timer: not the deadline or renewal it replaced, not its own', async () => {
  const { clock, holder, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 3_000 }))! // auto-renews every second
  await clock.advance(500)
  expect(await lock.renew()).toBe(true) // a new deadline and a new renewal time, in place of the old ones
  await clock.advance(200)
  expect(await lock.release()).toBe(true)
  expect(clock.pending).toBe(0)
  await close()
})

test('a hold that expired at its deadline while its auto-renewal was on its way leaves no retry when that renewal then fails', async () => {
  const { clock, faults, holder, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 1_200 }))! // renews at 400 ms; deadline about 1 186 ms
  const commits = gate()
  faults.commits = commits.p
  await clock.advance(400) // the auto-renewal is sent, and hangs
  faults.commits = undefined
  await clock.advance(800) // past the deadline
  expect(lock.held).toBe(false)
  commits.fail() // the store was unreachable after all: nothing to retry for an expired hold
  await settle()
  expect(code(lock)).toBe('EXPIRED')
  expect(clock.pending).toBe(0)
  await close()
})

test('a hold whose watch failed and that looked at its key leaves no rewatch once released', async () => {
  const { clock, faults, holder, close } = setup()
  faults.watches = 'error'
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  void lock.signal
  await settle() // the watch broke; the hold looked, found its entry, and will watch again in a while
  expect(lock.held).toBe(true)
  expect(await lock.release()).toBe(true)
  expect(clock.pending).toBe(0)
  await close()
})

test('a look at the key that comes back after the hold expired schedules nothing', async () => {
  const { clock, faults, holder, close } = setup()
  faults.watches = 'error'
  const reads = gate()
  faults.reads = reads.p
  const lock = (await holder.locks.acquire('lock:a', { ttl: 1_000, autoRenew: false }))!
  void lock.signal
  await settle() // the watch broke; the look's read is on its way
  await clock.advance(990) // the holder's deadline passes; the store (on its own clock) still has the entry
  expect(code(lock)).toBe('EXPIRED')
  reads.open() // the read finds the entry still carrying the token: nothing to do for a hold that is over
  faults.reads = undefined
  await settle()
  expect(clock.pending).toBe(0)
  await close()
})

test('a hold watches its key once, however often signal is read, and closes that watch when it ends', async () => {
  const { holder, watches, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  for (let i = 0; i < 3; i++) void lock.signal
  await settle()
  expect(watches()).toBe(1)
  void lock.signal
  await settle()
  expect(watches()).toBe(1)
  expect(await lock.release()).toBe(true)
  expect(watches()).toBe(0)
  void lock.signal // over: nothing to watch for
  await settle()
  expect(watches()).toBe(0)
  await close()
})

test('a hold that expired before its signal was first read watches nothing', async () => {
  const { clock, holder, watches, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 1_000, autoRenew: false }))!
  await clock.advance(990) // the holder's deadline (988 ms) passed
  expect(code(lock)).toBe('EXPIRED')
  await settle()
  expect(watches()).toBe(0)
  await close()
})

test('a hold whose release is on its way watches nothing when its signal is first read then', async () => {
  const { faults, holder, watches, close } = setup()
  const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
  const commits = gate()
  faults.commits = commits.p
  const releasing = lock.release()
  faults.commits = undefined
  void lock.signal
  await settle()
  expect(watches()).toBe(0)
  commits.open()
  expect(await releasing).toBe(true)
  expect(code(lock)).toBe('RELEASED')
  await close()
})

test('a shared hold watches its share and its group, and closes both when it ends, also a watch that starts only after the end', async () => {
  const { faults, holder, other, watches, close } = setup()
  await other.locks.acquire('lock:s', { mode: 'shared', ttl: 10_000, autoRenew: false })
  const shared = (await holder.locks.acquire('lock:s', { mode: 'shared', ttl: 10_000, autoRenew: false }))!
  void shared.signal
  await settle()
  expect(watches()).toBe(2)
  expect(await shared.release()).toBe(true)
  expect(watches()).toBe(0)

  // Released before its watches have even started: they are closed as they start.
  const late = (await holder.locks.acquire('lock:s', { mode: 'shared', ttl: 10_000, autoRenew: false }))!
  const starts = gate()
  faults.starts = starts.p
  void late.signal
  expect(await late.release()).toBe(true)
  starts.open()
  await settle()
  expect(watches()).toBe(0)
  await close()
})

test('a shared hold whose two watches both break looks once, and leaves no timer once released', async () => {
  const { clock, faults, holder, other, close } = setup()
  await other.locks.acquire('lock:s', { mode: 'shared', ttl: 10_000, autoRenew: false })
  faults.watches = 'error'
  const shared = (await holder.locks.acquire('lock:s', { mode: 'shared', ttl: 10_000, autoRenew: false }))!
  void shared.signal
  await settle() // both streams broke; the hold looked, found its share and its group
  expect(shared.held).toBe(true)
  expect(await shared.release()).toBe(true)
  expect(clock.pending).toBe(0)
  await close()
})

test('a hold never hands its clock a timer it did not set (the page clock reads the handle it is given to clear)', async () => {
  const readings = new ManualClock()
  // A fake clock, named so: the ManualClock, but clearing anything it did not hand out throws, as the page clock's does.
  const handed = new WeakSet<object>()
  const strict: Clock = {
    now: () => readings.now(),
    setTimeout(fn, ms) {
      const handle = readings.setTimeout(fn, ms)
      handed.add(handle)
      return handle
    },
    clearTimeout(handle) {
      if (typeof handle !== 'object' || handle === null || !handed.has(handle)) throw new TypeError('not a timer of this clock (fake)')
      readings.clearTimeout(handle)
    },
  }
  const holder = new Client(memoryAdapter({ namespace: `hold-cleanup-strict-${Math.random().toString(36).slice(2)}` }), { id: 'holder', clock: strict })
  const quiet = (await holder.locks.acquire('lock:quiet', { ttl: 5_000, autoRenew: false }))! // no renewal timer, no rewatch timer
  expect(await quiet.renew()).toBe(true)
  expect(await quiet.release()).toBe(true)
  const renewing = (await holder.locks.acquire('lock:renewing', { ttl: 3_000 }))!
  void renewing.signal
  await readings.advance(1_000) // one auto-renewal
  expect(await renewing.release()).toBe(true)
  expect(readings.pending).toBe(0)
  await holder.close()
})
