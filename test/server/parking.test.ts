/**
 * The node's parked commits (src/server/parking.ts) on their own, with no
 * HTTP in between: a memory store (which hands over: the store keeps the
 * commit) and the same store with its `handover` capability hidden (a fake:
 * the node then parks on its own watch, as in front of a Redis or an etcd).
 * Each test asks what a waiting caller gets: when, with which answer, and
 * what the node's counts and bounds say meanwhile.
 */
import { afterEach, describe, expect, test } from 'vitest'
import type { Adapter, Check, CommitOptions, CommitResult, Op, WatchSink } from '../../src/core/contract/adapter'
import { memoryAdapter } from '../../src/adapters/memory'
import { ParkConnection, Parking, type ParkWait } from '../../src/server/parking'

let n = 0
const opened: Adapter[] = []
afterEach(async () => {
  for (const a of opened.splice(0)) await a.close()
})

/** A fresh memory store. */
function store(): Adapter {
  const a = memoryAdapter({ namespace: `parking-${++n}` })
  opened.push(a)
  return a
}

/** Counts of what the node asked of a store. */
interface Seen {
  commits: number
  watching: number
  options: Array<CommitOptions | undefined>
}

/** `inner` with its handover capability hidden (a fake: the node parks on its own watch), counting commits and live watches. */
function watchedStore(inner: Adapter = store(), hooks: { beforeCommit?: (i: number) => Promise<void>; afterCommit?: (r: CommitResult, i: number) => Promise<void>; watch?: (key: string, sink: WatchSink) => Promise<() => void> } = {}): Adapter & { seen: Seen } {
  const seen: Seen = { commits: 0, watching: 0, options: [] }
  return {
    name: 'memory-watched',
    capabilities: { ...inner.capabilities, handover: false, keepParked: false, orElse: false },
    seen,
    get: (k) => inner.get(k),
    list: (...a) => inner.list(...a),
    async commit(checks, ops, options) {
      const i = seen.commits++
      seen.options.push(options)
      await hooks.beforeCommit?.(i)
      const r = await inner.commit(checks, ops, options && { requestId: options.requestId })
      await hooks.afterCommit?.(r, i)
      return r
    },
    async watch(prefix, sink, from) {
      const undo = hooks.watch ? await hooks.watch(prefix, sink) : await inner.watch(prefix, sink, from)
      seen.watching++
      let done = false
      return () => {
        if (done) return
        done = true
        seen.watching--
        undo()
      }
    },
    close: () => inner.close(),
  } as Adapter & { seen: Seen }
}

const hold = (key: string, owner = 'a'): Op => ({ type: 'set', key, value: 1, owner })
const free = (key: string): Check => ({ key, revision: null })
const wait = (ms: number, more: Partial<ParkWait> = {}): ParkWait => ({ ms, ...more })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Resolves with the commit's answer and when it came (ms after the call), never rejecting. */
function timed(p: Promise<CommitResult>): Promise<{ r: CommitResult; ms: number }> {
  const t0 = performance.now()
  return p.then((r) => ({ r, ms: performance.now() - t0 }))
}

describe.each([
  ['a store that hands over (memory)', () => store()],
  ['a store that does not (memory, handover hidden: a fake)', () => watchedStore()],
])('%s', (_name, make) => {
  test('a commit whose checks hold is answered at once, parked nowhere', async () => {
    const a = make()
    const parking = new Parking()
    const r = await parking.commit(a, [free('k')], [hold('k')], undefined, wait(5_000), () => new ParkConnection())
    expect(r.ok).toBe(true)
    expect(parking.counts).toEqual({ parked: 0, retried: 0, refused: 0, now: 0 })
  })

  test('a failed take waits, is counted while it waits, and goes through in the tick of the release', async () => {
    const a = make()
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking()
    let parkedCalls = 0
    const p = timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(5_000, { onParked: () => parkedCalls++ }), () => new ParkConnection()))
    await sleep(30)
    expect(parking.counts).toEqual({ parked: 1, retried: 0, refused: 0, now: 1 })
    expect(parkedCalls).toBe(1)
    await a.commit([], [{ type: 'delete', key: 'k' }])
    const { r, ms } = await p
    expect(r.ok).toBe(true)
    expect(ms).toBeLessThan(2_000)
    expect((await a.get('k'))?.owner).toBe('a')
    expect(parking.counts).toEqual({ parked: 1, retried: 1, refused: 0, now: 0 })
  })

  test('with no change it is answered with its first failure when its wait ends (cut to maxWaitMs)', async () => {
    const a = make()
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking({ maxWaitMs: 150 })
    const { r, ms } = await timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(60_000), () => new ParkConnection()))
    expect(r.ok).toBe(false)
    expect(!r.ok && r.failed.map((f) => [f.key, f.entry?.owner])).toEqual([['k', 'holder']])
    expect(ms).toBeGreaterThanOrEqual(140)
    expect(ms).toBeLessThan(3_000)
    expect(parking.counts.now).toBe(0)
    expect(parking.counts.retried).toBe(0)
  })

  test('its connection closing answers it at once, with its failure; so does a connection closed before it came', async () => {
    const a = make()
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking()
    const conn = new ParkConnection()
    const p = timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(10_000), () => conn))
    await sleep(30)
    expect(conn.parked).toBe(1)
    conn.close()
    const { r, ms } = await p
    expect(r.ok).toBe(false)
    expect(ms).toBeLessThan(2_000)
    expect(conn.parked).toBe(0)
    expect(parking.counts.now).toBe(0)
    // Answered with its first try: never tried again.
    expect(parking.counts.retried).toBe(0)
    // A connection already closed parks nothing: its commit is tried once.
    const again = await timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(10_000), () => conn))
    expect(again.r.ok).toBe(false)
    expect(again.ms).toBeLessThan(1_000)
    // The node still parks for others, and the holder's release still reaches them.
    const other = timed(parking.commit(a, [free('k')], [hold('k', 'b')], undefined, wait(10_000), () => new ParkConnection()))
    await sleep(30)
    await a.commit([], [{ type: 'delete', key: 'k' }])
    expect((await other).r.ok).toBe(true)
    expect((await a.get('k'))?.owner).toBe('b')
  })

  test("the node's close answers every parked commit, and parks nothing after", async () => {
    const a = make()
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking()
    const ps = [1, 2, 3].map((i) => timed(parking.commit(a, [free('k')], [hold('k', `w${i}`)], undefined, wait(10_000), () => new ParkConnection())))
    await sleep(30)
    expect(parking.counts.now).toBe(3)
    parking.close()
    for (const { r, ms } of await Promise.all(ps)) {
      expect(r.ok).toBe(false)
      expect(ms).toBeLessThan(2_000)
    }
    expect(parking.counts.now).toBe(0)
    const after = await timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(10_000), () => new ParkConnection()))
    expect(after.r.ok).toBe(false)
    expect(after.ms).toBeLessThan(1_000)
    expect(parking.counts.refused).toBe(1)
    expect((await a.get('k'))?.owner).toBe('holder')
  })

  test('past maxParked, maxPerConnection or maxParkedBytes a waiting commit is tried once and answered, counted refused', async () => {
    const a = make()
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking({ maxParked: 2, maxPerConnection: 1, maxParkedBytes: 10_000 })
    const c1 = new ParkConnection()
    const first = parking.commit(a, [free('k')], [hold('k', 'w1')], undefined, wait(10_000), () => c1)
    await sleep(20)
    // The same connection again: past its own bound.
    const perConn = await timed(parking.commit(a, [free('k')], [hold('k', 'w2')], undefined, wait(10_000), () => c1))
    expect(perConn.r.ok).toBe(false)
    expect(perConn.ms).toBeLessThan(1_000)
    expect(parking.counts.refused).toBe(1)
    // Another connection: fits.
    const second = parking.commit(a, [free('k')], [hold('k', 'w3')], undefined, wait(10_000), () => new ParkConnection())
    await sleep(20)
    expect(parking.counts.now).toBe(2)
    // The node's bound: two wait already.
    const node = await timed(parking.commit(a, [free('k')], [hold('k', 'w4')], undefined, wait(10_000), () => new ParkConnection()))
    expect(node.r.ok).toBe(false)
    expect(node.ms).toBeLessThan(1_000)
    expect(parking.counts.refused).toBe(2)
    parking.close()
    await Promise.all([first, second])
    // Bytes: a request the caller says is large, and one counted from its JSON.
    const bytes = new Parking({ maxParkedBytes: 1_000 })
    const big = await timed(bytes.commit(a, [free('k')], [hold('k')], undefined, wait(10_000, { bytes: 1_001 }), () => new ParkConnection()))
    expect(big.r.ok).toBe(false)
    expect(big.ms).toBeLessThan(1_000)
    const bigJson = await timed(bytes.commit(a, [free('k')], [{ type: 'set', key: 'k', value: 'x'.repeat(600) }], undefined, wait(10_000), () => new ParkConnection()))
    expect(bigJson.r.ok).toBe(false)
    expect(bigJson.ms).toBeLessThan(1_000)
    expect(bytes.counts.refused).toBe(2)
    // The bound is on the bytes of every commit waiting at once, given back as each is answered.
    const shared = new Parking({ maxParkedBytes: 1_000 })
    const one = shared.commit(a, [free('k')], [hold('k')], undefined, wait(10_000, { bytes: 600 }), () => new ParkConnection())
    await sleep(20)
    const two = await timed(shared.commit(a, [free('k')], [hold('k')], undefined, wait(10_000, { bytes: 600 }), () => new ParkConnection()))
    expect(two.ms).toBeLessThan(1_000)
    expect(shared.counts).toMatchObject({ now: 1, refused: 1 })
    shared.close()
    await one
    const sequential = new Parking({ maxParkedBytes: 1_000, maxWaitMs: 30 })
    for (let i = 0; i < 3; i++) await sequential.commit(a, [free('k')], [hold('k')], undefined, wait(10_000, { bytes: 600 }), () => new ParkConnection())
    expect(sequential.counts).toMatchObject({ parked: 3, refused: 0 })
    // Just under the bound, both ways, it waits.
    const fits = bytes.commit(a, [free('k')], [hold('k')], undefined, wait(10_000, { bytes: 1_000 }), () => new ParkConnection())
    await sleep(20)
    expect(bytes.counts).toMatchObject({ now: 1, refused: 2 })
    bytes.close()
    await fits
  })

  test('the bounds count a commit from its first try and free it when answered: a slot used and given back serves the next', async () => {
    const a = make()
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking({ maxParked: 1, maxWaitMs: 60 })
    for (let i = 0; i < 3; i++) {
      const { r, ms } = await timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(10_000), () => new ParkConnection()))
      expect(r.ok).toBe(false)
      expect(ms).toBeGreaterThanOrEqual(50)
    }
    expect(parking.counts).toEqual({ parked: 3, retried: 0, refused: 0, now: 0 })
  })

  test('a commit that may not wait (no wait, or no checks) is a plain commit: never parked, never refused', async () => {
    const a = make()
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking()
    let asked = 0
    const r = await parking.commit(a, [free('k')], [hold('k')], undefined, wait(0), () => {
      asked++
      return new ParkConnection()
    })
    expect(r.ok).toBe(false)
    const r2 = await parking.commit(a, [], [hold('j')], undefined, wait(10_000), () => {
      asked++
      return new ParkConnection()
    })
    expect(r2.ok).toBe(true)
    expect(asked).toBe(0)
    expect(parking.counts).toEqual({ parked: 0, retried: 0, refused: 0, now: 0 })
  })
})

describe('a store that hands over: the store keeps the commit', () => {
  test('the node passes the wait on to the store (waitChange, keepParked, parkOrder, wakeOwner, onAnswer) and a signal of its connection', async () => {
    const inner = store()
    const got: Array<CommitOptions | undefined> = []
    const a: Adapter = { ...inner, name: inner.name, capabilities: inner.capabilities, get: inner.get.bind(inner), list: inner.list.bind(inner), watch: inner.watch.bind(inner), close: inner.close.bind(inner), commit: (c, o, opts) => (got.push(opts), inner.commit(c, o, opts)) }
    const parking = new Parking({ maxWaitMs: 5_000 })
    const answers: CommitResult[] = []
    const conn = new ParkConnection()
    await parking.commit(a, [free('k')], [hold('k')], { requestId: 'r1' }, wait(9_000, { keep: true, order: 7, wakeOwner: 'w', onAnswer: (r) => answers.push(r) }), () => conn)
    expect(got[0]).toMatchObject({ requestId: 'r1', waitChange: 5_000, keepParked: true, parkOrder: 7, wakeOwner: 'w' })
    expect(got[0]!.signal).toBe(conn.signal)
    expect(got[0]!.signal!.aborted).toBe(false)
    // No connection: the node's own signal, which its close aborts.
    await parking.commit(a, [free('j')], [hold('j')], undefined, wait(100), () => undefined)
    expect(got[1]!.signal).toBeInstanceOf(AbortSignal)
    expect(got[1]!.signal!.aborted).toBe(false)
    parking.close()
    expect(got[1]!.signal!.aborted).toBe(true)
    expect(got[1]).toMatchObject({ waitChange: 100, keepParked: false })
  })

  test("a take answered through the store's handover with a failure is not counted retried", async () => {
    const a = store()
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking({ maxWaitMs: 100 })
    const r = await parking.commit(a, [free('k')], [hold('k')], undefined, wait(100, { keep: true }), () => new ParkConnection())
    expect(r.ok).toBe(false)
    expect(parking.counts).toMatchObject({ parked: 1, retried: 0 })
  })

  test("a connection's parking closes with the node's: the node's close ends a connection's parked take", async () => {
    const a = store()
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking()
    const conn = new ParkConnection()
    const p = timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(10_000, { keep: true }), () => conn))
    await sleep(30)
    parking.close()
    const { r, ms } = await p
    expect(r.ok).toBe(false)
    expect(ms).toBeLessThan(2_000)
    expect(conn.closed).toBe(true)
  })
})

describe('a store that does not hand over (memory, handover hidden: a fake): the node parks on its watch', () => {
  test('the node watches each checked key once, only while the commit waits, and passes the options through unchanged', async () => {
    const a = watchedStore()
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking()
    const p = parking.commit(a, [free('k'), { key: 'k', created: null }, free('j')], [hold('k')], { requestId: 'q' }, wait(10_000), () => new ParkConnection())
    await sleep(30)
    expect(a.seen.watching).toBe(2)
    await a.commit([], [{ type: 'delete', key: 'k' }])
    expect((await p).ok).toBe(true)
    expect(a.seen.watching).toBe(0)
    expect(a.seen.options.filter((o) => o !== undefined)).toEqual([{ requestId: 'q' }, { requestId: 'q' }])
    // Answered at once: the watches end too.
    await parking.commit(a, [free('x')], [hold('x')], undefined, wait(10_000), () => new ParkConnection())
    expect(a.seen.watching).toBe(0)
  })

  test('a change that leaves its failed check failing (a new value of the held key, a longer key under it) wakes nothing; nor does it judge the checks of other keys', async () => {
    const a = watchedStore()
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking()
    const p = timed(parking.commit(a, [free('k'), free('j')], [hold('k')], undefined, wait(10_000), () => new ParkConnection()))
    await sleep(30)
    await a.commit([], [hold('k', 'holder2')])
    await a.commit([], [hold('k2', 'other')])
    await a.commit([], [{ type: 'delete', key: 'k2' }])
    await sleep(50)
    expect(parking.counts).toMatchObject({ parked: 1, retried: 0, now: 1 })
    const commitsBefore = a.seen.commits
    await a.commit([], [{ type: 'delete', key: 'k' }])
    const { r } = await p
    expect(r.ok).toBe(true)
    // One try after the change (and the delete itself).
    expect(a.seen.commits - commitsBefore).toBe(2)
    expect(parking.counts.retried).toBe(1)
  })

  test('a check on a revision or a life flips when a put brings that revision or life; its failing does not', async () => {
    const a = watchedStore()
    const first = await a.commit([], [hold('k', 'holder')])
    if (!first.ok) throw new Error('setup')
    const entry = first.entries[0]!
    // Checks that hold now (the take's own check on the key it holds) and one that fails: the holder's change of value fails the first.
    await a.commit([], [hold('j', 'x')])
    const parking = new Parking()
    const byCreated = timed(parking.commit(a, [{ key: 'k', created: entry.created }, free('j')], [hold('j')], undefined, wait(10_000), () => new ParkConnection()))
    // j is held: the take waits. A put at k with the same life does not change what its check says.
    await sleep(30)
    expect(parking.counts.now).toBe(1)
    await a.commit([], [hold('k', 'holder')])
    await sleep(30)
    expect(parking.counts.retried).toBe(0)
    // A new life at k (another owner): the check that held fails now; the node tries again and answers that failure.
    await a.commit([], [hold('k', 'someone')])
    const { r } = await byCreated
    expect(r.ok).toBe(false)
    expect(!r.ok && r.failed.map((f) => f.key).sort()).toEqual(['j', 'k'])
    expect(parking.counts.retried).toBe(1)
  })

  test('a revision check that failed flips when a put brings the wanted revision', async () => {
    const a = watchedStore()
    const w = await a.commit([], [hold('k', 'holder')])
    if (!w.ok) throw new Error('setup')
    const want = w.revision + 1
    const parking = new Parking()
    const p = parking.commit(a, [{ key: 'k', revision: want }], [hold('done')], undefined, wait(10_000), () => new ParkConnection())
    await sleep(30)
    await a.commit([], [hold('k', 'holder')])
    expect((await p).ok).toBe(true)
    expect(parking.counts.retried).toBe(1)
  })

  test('a change between the watch and the first answer is judged against that answer: it goes through with no wait', async () => {
    const inner = store()
    await inner.commit([], [hold('k', 'holder')])
    const a = watchedStore(inner, {
      async afterCommit(r, i) {
        // The first try fails; the key is freed before its answer reaches the node.
        if (i === 0 && !r.ok) await inner.commit([], [{ type: 'delete', key: 'k' }])
      },
    })
    const parking = new Parking()
    const { r, ms } = await timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(10_000), () => new ParkConnection()))
    expect(r.ok).toBe(true)
    expect(ms).toBeLessThan(2_000)
    expect(parking.counts).toMatchObject({ parked: 1, retried: 1, now: 0 })
  })

  test('a change before the first answer that it already accounts for wakes nothing', async () => {
    const inner = store()
    await inner.commit([], [hold('k', 'holder')])
    const a = watchedStore(inner, {
      async afterCommit(r, i) {
        if (i === 0 && !r.ok) await inner.commit([], [hold('k', 'holder2')])
      },
    })
    const parking = new Parking({ maxWaitMs: 150 })
    const { r, ms } = await timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(10_000), () => new ParkConnection()))
    expect(r.ok).toBe(false)
    expect(ms).toBeGreaterThanOrEqual(140)
    expect(parking.counts.retried).toBe(0)
  })

  test('before the first answer, a change at a longer key under a checked one does not hide the change at the key', async () => {
    const inner = store()
    await inner.commit([], [hold('k', 'holder')])
    const a = watchedStore(inner, {
      async afterCommit(r, i) {
        if (i === 0 && !r.ok) {
          await inner.commit([], [{ type: 'delete', key: 'k' }])
          await inner.commit([], [hold('k2', 'other')])
        }
      },
    })
    const parking = new Parking()
    const { r, ms } = await timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(10_000), () => new ParkConnection()))
    expect(r.ok).toBe(true)
    expect(ms).toBeLessThan(2_000)
  })

  test('a commit from no connection (connOf gives none, or is not passed) waits all the same, bounded by the node alone', async () => {
    for (const connOf of [() => undefined, undefined]) {
      const a = watchedStore()
      await a.commit([], [hold('k', 'holder')])
      const parking = new Parking({ maxPerConnection: 0 })
      const p = timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(10_000), connOf))
      await sleep(30)
      expect(parking.counts.now).toBe(1)
      await a.commit([], [{ type: 'delete', key: 'k' }])
      expect((await p).r.ok).toBe(true)
    }
  })

  test('a store with no capabilities at all is parked for on its watch', async () => {
    const a = watchedStore()
    Object.defineProperty(a, 'capabilities', { value: undefined })
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking()
    const p = parking.commit(a, [free('k')], [hold('k')], undefined, wait(10_000), () => new ParkConnection())
    await sleep(30)
    expect(a.seen.watching).toBe(1)
    await a.commit([], [{ type: 'delete', key: 'k' }])
    expect((await p).ok).toBe(true)
  })

  test('without keep the try after the change is the answer, even a failure; with keep it waits on while it fails where it did', async () => {
    for (const keep of [false, true]) {
      const inner = store()
      // Freed, and taken again just before the node's try after the change: that try fails.
      const a = watchedStore(inner, {
        async beforeCommit(i) {
          if (i === 2) await inner.commit([], [hold('k', 'quick')])
        },
      })
      await a.commit([], [hold('k', 'holder')])
      const parking = new Parking({ maxWaitMs: 400 })
      const p = timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(400, { keep }), () => new ParkConnection()))
      await sleep(30)
      await inner.commit([], [{ type: 'delete', key: 'k' }])
      if (keep) {
        await sleep(50)
        expect(parking.counts.now).toBe(1)
        expect(parking.counts.retried).toBe(1)
        await inner.commit([], [{ type: 'delete', key: 'k' }])
        const { r } = await p
        expect(r.ok).toBe(true)
        expect(parking.counts.retried).toBe(2)
      } else {
        const { r, ms } = await p
        expect(r.ok).toBe(false)
        expect(ms).toBeLessThan(350)
      }
    }
  })

  test('with keep, a try that fails where the first held (the caller lost its place) is answered at once', async () => {
    const a = watchedStore()
    const place = await a.commit([], [hold('place', 'me')])
    if (!place.ok) throw new Error('setup')
    await a.commit([], [hold('k', 'holder')])
    const parking = new Parking()
    const p = timed(parking.commit(a, [{ key: 'place', created: place.entries[0]!.created }, free('k')], [hold('k')], undefined, wait(10_000, { keep: true }), () => new ParkConnection()))
    await sleep(30)
    await a.commit([], [{ type: 'delete', key: 'place' }])
    const { r, ms } = await p
    expect(r.ok).toBe(false)
    expect(!r.ok && r.failed.map((f) => f.key).sort()).toEqual(['k', 'place'])
    expect(ms).toBeLessThan(2_000)
    expect((await a.get('k'))?.owner).toBe('holder')
  })

  test('with wakeOwner, a try that fails at a key that owner holds is answered: at once on the first try, or on the change', async () => {
    const a = watchedStore()
    await a.commit([], [hold('g', 'GROUP'), hold('h', 'H')])
    const parking = new Parking()
    // Failed at a key with no entry, at g (the group's) and at h (another's): answered, for g.
    const now = await timed(parking.commit(a, [{ key: 'none', revision: 1 }, free('g'), free('h')], [hold('g')], undefined, wait(10_000, { keep: true, wakeOwner: 'GROUP' }), () => new ParkConnection()))
    expect(now.r.ok).toBe(false)
    expect(now.ms).toBeLessThan(1_000)
    expect(parking.counts.parked).toBe(0)
    // Held by another owner first, and h too: parked. The group starts at g (no flip: g stays taken), then h is freed:
    // the node's try then fails at g, which the group holds.
    await a.commit([], [hold('g', 'EXCL')])
    const later = timed(parking.commit(a, [free('g'), free('h')], [hold('g')], undefined, wait(10_000, { keep: true, wakeOwner: 'GROUP' }), () => new ParkConnection()))
    await sleep(30)
    expect(parking.counts.now).toBe(1)
    await a.commit([], [hold('g', 'GROUP')])
    await sleep(30)
    expect(parking.counts.retried).toBe(0)
    await a.commit([], [{ type: 'delete', key: 'h' }])
    const { r, ms } = await later
    expect(r.ok).toBe(false)
    expect(!r.ok && r.failed[0]!.entry?.owner).toBe('GROUP')
    expect(ms).toBeLessThan(2_000)
    // A keep without wakeOwner waits on over the same group.
    await a.commit([], [hold('h', 'H')])
    const plain = timed(parking.commit(a, [free('g'), free('h')], [hold('g')], undefined, wait(150, { keep: true }), () => new ParkConnection()))
    await sleep(30)
    await a.commit([], [{ type: 'delete', key: 'h' }])
    const { r: r2, ms: ms2 } = await plain
    expect(r2.ok).toBe(false)
    expect(ms2).toBeGreaterThanOrEqual(140)
    // Nor over an entry with no owner.
    await a.commit([], [{ type: 'set', key: 'g', value: 1 }, hold('h', 'H')])
    const unowned = await timed(parking.commit(a, [free('g')], [hold('g')], undefined, wait(150, { keep: true }), () => new ParkConnection()))
    expect(unowned.r.ok).toBe(false)
    expect(unowned.ms).toBeGreaterThanOrEqual(140)
  })

  test('a watch that fails, or cannot be set up, counts as a change: the node tries again at once rather than waiting blind', async () => {
    for (const how of ['fails', 'refused'] as const) {
      let failWatch: ((err: Error) => void) | undefined
      const inner = store()
      await inner.commit([], [hold('k', 'holder')])
      const a = watchedStore(inner, {
        async watch(key, sink) {
          if (how === 'refused') throw new Error('no watch today')
          failWatch = (err) => sink.error(err)
          return inner.watch(key, sink)
        },
      })
      const parking = new Parking({ maxWaitMs: 5_000 })
      const p = timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(5_000), () => new ParkConnection()))
      if (how === 'fails') {
        await sleep(30)
        expect(parking.counts.now).toBe(1)
        failWatch!(new Error('stream broke'))
      }
      const { r, ms } = await p
      expect(r.ok).toBe(false)
      expect(ms).toBeLessThan(1_000)
      expect(parking.counts.retried).toBe(1)
      expect(a.seen.commits).toBe(2)
    }
  })

  test('a connection closed while the watch was being set up: its commit is answered with its first try at once', async () => {
    const inner = store()
    await inner.commit([], [hold('k', 'holder')])
    const conn = new ParkConnection()
    const a = watchedStore(inner, {
      async watch(key, sink) {
        conn.close()
        return inner.watch(key, sink)
      },
    })
    const parking = new Parking()
    const { r, ms } = await timed(parking.commit(a, [free('k')], [hold('k')], undefined, wait(10_000), () => conn))
    expect(r.ok).toBe(false)
    expect(ms).toBeLessThan(1_000)
    expect(a.seen.watching).toBe(0)
    expect(a.seen.commits).toBe(1)
    expect(parking.counts.retried).toBe(0)
  })
})

describe('ParkConnection', () => {
  test('its signal aborts on close (also one asked for after), close runs each drop once, and an undone drop never runs', () => {
    const conn = new ParkConnection()
    const signal = conn.signal
    expect(conn.signal).toBe(signal)
    const ran: string[] = []
    conn.onClose(() => ran.push('a'))
    const undo = conn.onClose(() => ran.push('b'))
    undo()
    expect(signal.aborted).toBe(false)
    conn.close()
    conn.close()
    expect(ran).toEqual(['a'])
    expect(signal.aborted).toBe(true)
    expect(conn.closed).toBe(true)
    const late = new ParkConnection()
    late.close()
    expect(late.signal.aborted).toBe(true)
  })

  test('closeWith ties it to its first parent only: that parent closing closes it', () => {
    const parent = new ParkConnection()
    const other = new ParkConnection()
    const conn = new ParkConnection()
    conn.closeWith(parent)
    conn.closeWith(other)
    other.close()
    expect(conn.closed).toBe(false)
    parent.close()
    expect(conn.closed).toBe(true)
  })
})
