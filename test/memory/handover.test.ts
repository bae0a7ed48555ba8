/**
 * The local store hands over (capability `handover`, src/adapters/kit/parked.ts):
 * a parked commit is tried again inside the step of the commit or expiry
 * that changed one of its checked keys, in `parkOrder` then arrival order,
 * each with a revision of its own, before the step's caller has its answer.
 * Driven on the store itself (a ManualClock for the waits and TTLs), with a
 * watcher that records every event, so each test sees what happened and in
 * which step.
 */
import { getEventListeners } from 'node:events'
import { describe, expect, test } from 'vitest'
import type { Check, CommitResult, Op, WatchEvent } from 'zaris'
import { ManualClock } from 'zaris/testing'
import { LocalStore, StoreQuota } from '../../src/adapters/kit/local-store'
import { localAdapter, type LocalBackend } from '../../src/adapters/kit/local-adapter'
import type { ParkOptions } from '../../src/adapters/kit/parked'
import { arrayDisk } from './array-disk'

const set = (key: string, owner?: string, ttl?: number): Op => ({ type: 'set', key, value: null, ...(owner ? { owner } : {}), ...(ttl ? { ttl } : {}) })
const del = (key: string): Op => ({ type: 'delete', key })
const absent = (key: string): Check => ({ key, revision: null })
const life = (key: string, created: number): Check => ({ key, created })

function storeOf(clock = new ManualClock(), extra: Partial<ConstructorParameters<typeof LocalStore>[0]> = {}) {
  const store = new LocalStore({ clock, ...extra })
  const events: WatchEvent[] = []
  store.watch('', { event: (ev) => events.push(ev), error: () => {} })
  return { store, clock, events }
}

/** A commit that may park, and what became of it (synchronously visible once settled). */
function parked(store: LocalStore, checks: Check[], ops: Op[], park: Partial<ParkOptions> = {}) {
  const out: { answer?: CommitResult; error?: unknown; parked: boolean } = { parked: false }
  const r = store.commit(checks, ops, undefined, undefined, { ms: 10_000, keep: true, ...park, onParked: () => (out.parked = true) })
  if (r instanceof Promise) r.then((a) => (out.answer = a), (e) => (out.error = e))
  else out.answer = r
  return out
}

const tick = () => new Promise((r) => setTimeout(r, 0))

/** A waiter's place and its parked take of `lock`, as the core sends them. */
function waiter(store: LocalStore, id: string, lock = 'lock', park: Partial<ParkOptions> = {}) {
  const place = store.commit([absent(`q.${id}`)], [set(`q.${id}`, id)]) as Extract<CommitResult, { ok: true }>
  const created = place.entries[0]!.created
  return { id, place: created, take: parked(store, [absent(lock), life(`q.${id}`, created)], [set(lock, id), del(`q.${id}`)], { order: created, ...park }) }
}

describe('a release hands the lock over in its own step', () => {
  test('the parked take is applied right after the release, with the next revision, before the release returns', async () => {
    const { store, events } = storeOf()
    store.commit([absent('lock')], [set('lock', 'h')])
    const w = waiter(store, 'w')
    await tick()
    expect(w.take.parked).toBe(true)
    expect(w.take.answer).toBeUndefined()
    const release = store.commit([life('lock', 1)], [del('lock')]) as Extract<CommitResult, { ok: true }>
    // Before anything else can run: the lock is the waiter's.
    expect(store.get('lock')).toMatchObject({ owner: 'w', revision: release.revision + 1, created: release.revision + 1 })
    expect(store.get('q.w')).toBeUndefined()
    expect(store.parked).toBe(0)
    await tick()
    expect(w.take.answer).toMatchObject({ ok: true, revision: release.revision + 1, deleted: ['q.w'] })
    expect(events.slice(-3).map((e) => `${e.type} ${e.key} ${e.revision}`)).toEqual([
      `delete lock ${release.revision}`,
      `delete q.w ${release.revision + 1}`,
      `put lock ${release.revision + 1}`,
    ])
  })

  test('nobody can take the key between: a plain try right after the release finds it held', async () => {
    const { store } = storeOf()
    store.commit([absent('lock')], [set('lock', 'h')])
    waiter(store, 'w')
    store.commit([life('lock', 1)], [del('lock')])
    const barger = store.commit([absent('lock')], [set('lock', 'b')])
    expect(barger).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'w' } }] })
  })

  test('an expiry hands over as a release does', async () => {
    const { store, clock } = storeOf()
    store.commit([absent('lock')], [set('lock', 'h', 1_000)])
    const w = waiter(store, 'w')
    await clock.advance(1_000)
    expect(store.get('lock')).toMatchObject({ owner: 'w' })
    await tick()
    expect(w.take.answer).toMatchObject({ ok: true })
  })

  test('a holder renewing its lock wakes nobody: the parked take stays, unanswered (kept or not)', async () => {
    const { store } = storeOf()
    store.commit([absent('lock')], [set('lock', 'h', 5_000)])
    const w = waiter(store, 'w')
    const plain = parked(store, [absent('lock')], [set('lock', 'plain')], { keep: false })
    for (let i = 0; i < 3; i++) store.commit([life('lock', 1)], [set('lock', 'h', 5_000)])
    await tick()
    expect(w.take.answer).toBeUndefined()
    // Without keepParked too: a renewal turned no check (the key is still not free).
    expect(plain.answer).toBeUndefined()
    expect(store.parked).toBe(2)
  })
})

describe('the order parked commits are tried in', () => {
  test('in parkOrder, whatever order they parked in; each release hands to the next', async () => {
    const { store } = storeOf()
    store.commit([absent('lock')], [set('lock', 'h')])
    const places = ['a', 'b', 'c'].map((id) => (store.commit([absent(`q.${id}`)], [set(`q.${id}`, id)]) as Extract<CommitResult, { ok: true }>).revision)
    // They park in the order c, a, b: their places say a, b, c.
    const takes = [2, 0, 1].map((i) => {
      const id = ['a', 'b', 'c'][i]!
      return { id, take: parked(store, [absent('lock'), life(`q.${id}`, places[i]!)], [set('lock', id), del(`q.${id}`)], { order: places[i] }) }
    })
    const holders: string[] = []
    for (let i = 0; i < 3; i++) {
      const now = store.get('lock')!
      store.commit([life('lock', now.created)], [del('lock')])
      holders.push(store.get('lock')!.owner!)
    }
    expect(holders).toEqual(['a', 'b', 'c'])
    await tick()
    expect(takes.every((t) => t.take.answer?.ok)).toBe(true)
  })

  test('without parkOrder, in the order they parked, after every ordered one', async () => {
    const { store } = storeOf()
    store.commit([absent('lock')], [set('lock', 'h')])
    parked(store, [absent('lock')], [set('lock', 'first')])
    parked(store, [absent('lock')], [set('lock', 'second')])
    parked(store, [absent('lock')], [set('lock', 'ordered')], { order: 1_000 })
    const holders: string[] = []
    for (let i = 0; i < 3; i++) {
      store.commit([life('lock', store.get('lock')!.created)], [del('lock')])
      holders.push(store.get('lock')!.owner!)
    }
    expect(holders).toEqual(['ordered', 'first', 'second'])
  })

  test('a try that goes through lets others through in the same step (a cascade)', async () => {
    const { store } = storeOf()
    store.commit([], [set('x', 'h'), set('y', 'h')])
    // b waits for y; a waits for x and frees y when it goes through.
    const b = parked(store, [absent('y')], [set('b-has', 'b')])
    const a = parked(store, [absent('x')], [set('a-has', 'a'), del('y')])
    const r = store.commit([], [del('x')]) as Extract<CommitResult, { ok: true }>
    expect(store.get('a-has')?.revision).toBe(r.revision + 1)
    expect(store.get('b-has')?.revision).toBe(r.revision + 2)
    await tick()
    expect(a.answer?.ok && b.answer?.ok).toBe(true)
  })
})

describe('which failed tries are answered', () => {
  test('keepParked: a waiter behind another stays parked through a handover that is not its turn, and costs no answer', async () => {
    const { store } = storeOf()
    store.commit([absent('lock')], [set('lock', 'h')])
    const w1 = waiter(store, 'w1')
    const w2 = waiter(store, 'w2')
    store.commit([life('lock', 1)], [del('lock')])
    await tick()
    expect(w1.take.answer?.ok).toBe(true)
    expect(w2.take.answer).toBeUndefined()
    expect(store.parked).toBe(1)
  })

  test('keepParked: a take whose place is deleted (the waiter gave up) is answered with that failure and never applied', async () => {
    const { store } = storeOf()
    store.commit([absent('lock')], [set('lock', 'h')])
    const w = waiter(store, 'w')
    store.commit([life('q.w', w.place)], [del('q.w')])
    await tick()
    expect(w.take.answer).toMatchObject({ ok: false, failed: [{ key: 'lock' }, { key: 'q.w', entry: undefined }] })
    store.commit([life('lock', 1)], [del('lock')])
    expect(store.get('lock')).toBeUndefined()
  })

  test('without keepParked: the first try after a change that turned a check is the answer, success or not', async () => {
    const { store } = storeOf()
    store.commit([absent('lock')], [set('lock', 'h')])
    const first = waiter(store, 'first')
    const other = parked(store, [absent('lock')], [set('lock', 'other')], { keep: false, order: Number.MAX_SAFE_INTEGER })
    store.commit([life('lock', 1)], [del('lock')])
    await tick()
    expect(first.take.answer?.ok).toBe(true)
    // The delete turned its check; by its try, first held the lock: answered with that failure.
    expect(other.answer).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'first' } }] })
  })

  test('wakeOwner: answered when a checked key comes to be held by that owner, and not parked when it already is', async () => {
    const { store } = storeOf()
    store.commit([absent('lock')], [set('lock', 'h')])
    const group = parked(store, [absent('lock')], [set('lock', 'group')], { order: 1 })
    const reader = parked(store, [absent('lock')], [set('lock', 'r2')], { order: 2, wakeOwner: 'group' })
    store.commit([life('lock', 1)], [del('lock')])
    await tick()
    expect(group.answer?.ok).toBe(true)
    expect(reader.answer).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'group' } }] })
    const late = parked(store, [absent('lock')], [set('lock', 'r3')], { wakeOwner: 'group' })
    expect(late.parked).toBe(false)
    await tick()
    expect(late.answer).toMatchObject({ ok: false })
  })
})

describe('the end of a wait', () => {
  test('the wait runs out: answered with a last try, the failure when it fails', async () => {
    const { store, clock } = storeOf()
    store.commit([absent('lock')], [set('lock', 'h')])
    const t = parked(store, [absent('lock')], [set('lock', 'w')], { ms: 500 })
    await clock.advance(499)
    expect(t.answer).toBeUndefined()
    await clock.advance(1)
    expect(t.answer).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
    expect(store.parked).toBe(0)
  })

  test('stop: answered with its first try, never applied afterwards', async () => {
    const { store } = storeOf()
    store.commit([absent('lock')], [set('lock', 'h')])
    let end!: () => void
    let undone = 0
    const t = parked(store, [absent('lock')], [set('lock', 'w')], {
      stop: (e) => {
        end = e
        return () => undone++
      },
    })
    end()
    await tick()
    expect(t.answer).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
    expect(undone).toBe(1)
    store.commit([life('lock', 1)], [del('lock')])
    expect(store.get('lock')).toBeUndefined()
  })

  test("an adapter's close answers its own parked commits with their first try, and a signal ends one; the store's close ends them all", async () => {
    const clock = new ManualClock()
    const store = new LocalStore({ clock })
    const a = localAdapter('memory', store)
    const b = localAdapter('memory', store)
    await a.commit([absent('lock')], [set('lock', 'h')])
    const fromA = a.commit([absent('lock')], [set('lock', 'a')], { waitChange: 10_000, keepParked: true })
    const stop = new AbortController()
    const fromB = b.commit([absent('lock')], [set('lock', 'b')], { waitChange: 10_000, keepParked: true, signal: stop.signal })
    const fromB2 = b.commit([absent('lock')], [set('lock', 'b2')], { waitChange: 10_000, keepParked: true })
    await tick()
    expect(store.parked).toBe(3)
    await a.close()
    expect(await fromA).toMatchObject({ ok: false })
    stop.abort()
    expect(await fromB).toMatchObject({ ok: false })
    expect(store.parked).toBe(1)
    store.close()
    expect(await fromB2).toMatchObject({ ok: false })
    expect(store.get('lock')).toMatchObject({ owner: 'h' })
  })

  test('a try that throws (the quota, an add over a non-number) fails its own caller only; the step that woke it stands', async () => {
    const { store } = storeOf(new ManualClock(), { quota: new StoreQuota(400) })
    store.commit([absent('lock')], [set('lock', 'h'), { type: 'set', key: 'n', value: 'text' }])
    const big = parked(store, [absent('lock')], [{ type: 'set', key: 'lock', value: 'x'.repeat(500) }])
    const bad = parked(store, [absent('lock')], [set('lock', 'bad'), { type: 'add', key: 'n', delta: 1 }])
    const fine = parked(store, [absent('lock')], [set('lock', 'fine')])
    const release = store.commit([life('lock', 1)], [del('lock')])
    expect(release.ok).toBe(true)
    await tick()
    expect(big.error).toMatchObject({ code: 'TOO_LARGE' })
    expect(bad.error).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(fine.answer?.ok).toBe(true)
    expect(store.get('lock')?.owner).toBe('fine')
  })

  test("a durable store writes a parked commit's try with the tag it parked with", async () => {
    const disk = arrayDisk()
    const tags: unknown[] = []
    const { store } = storeOf(new ManualClock(), {
      persistence: {
        write: (rev, puts, deletes, tag) => {
          disk.persistence.write(rev, puts, deletes)
          tags.push(tag)
        },
      },
    })
    store.commit([absent('lock')], [set('lock', 'h')])
    parked(store, [absent('lock')], [set('lock', 'w')], { tag: 'req-1' })
    store.commit([life('lock', 1)], [del('lock')])
    expect(tags).toEqual([undefined, undefined, 'req-1'])
    expect(disk.writes.map((w) => w.revision)).toEqual([1, 2, 3])
  })
})

describe('the adapter over a store that hands over', () => {
  test("a release that handed over is answered after the new holder's take, in the same turn: the next holder hears first", async () => {
    const store = new LocalStore({ clock: new ManualClock() })
    const a = localAdapter('memory', store)
    await a.commit([absent('lock')], [set('lock', 'h')])
    const order: string[] = []
    const take = a.commit([absent('lock')], [set('lock', 'w')], { waitChange: 10_000, keepParked: true }).then((r) => order.push(`take ${r.ok}`))
    await tick()
    const release = a.commit([life('lock', 1)], [del('lock')]).then((r) => order.push(`release ${r.ok}`))
    setImmediate(() => order.push('next turn'))
    await Promise.all([take, release])
    await new Promise((r) => setImmediate(r))
    // The take was answered inside the release's step; a turn more for the release would let a new holder
    // whose loop never yields the event loop keep the releaser away for good (the fairness test below).
    expect(order).toEqual(['take true', 'release true', 'next turn'])
  })

  test("on a store whose answers wait for its disk, a release that handed over is answered a turn after the new holder's take", async () => {
    const store = new LocalStore({ clock: new ManualClock() })
    // The SQLite file's store: a parked commit's answer is on its way through the disk when the step ends.
    const disk: LocalBackend = {
      get: (key) => store.get(key),
      list: (prefix, after, limit) => store.list(prefix, after, limit),
      history: (prefix, after, limits) => store.history(prefix, after, limits),
      commit: (checks, ops, seen, requestId, park) => store.commit(checks, ops, seen, requestId, park),
      watch: (prefix, sink, from) => store.watch(prefix, sink, from),
      get granted() {
        return store.granted
      },
      answersAtOnce: false,
    }
    const a = localAdapter('sqlite', disk)
    await a.commit([absent('lock')], [set('lock', 'h')])
    const order: string[] = []
    const take = a.commit([absent('lock')], [set('lock', 'w')], { waitChange: 10_000, keepParked: true }).then((r) => order.push(`take ${r.ok}`))
    await tick()
    const release = a.commit([life('lock', 1)], [del('lock')]).then((r) => order.push(`release ${r.ok}`))
    // The release's answer waits a turn of the event loop: whatever chain carries the take's answer (a node's) runs out first.
    setImmediate(() => order.push('next turn'))
    await Promise.all([take, release])
    expect(order).toEqual(['take true', 'next turn', 'release true'])
    // A commit that hands nothing over is answered in its own turn (no wait).
    const plain: string[] = []
    const put = a.commit([], [set('other', 'x')]).then(() => plain.push('put'))
    setImmediate(() => plain.push('next turn'))
    await put
    await new Promise((r) => setImmediate(r))
    expect(plain).toEqual(['put', 'next turn'])
  })

  test('a wait without keepParked is answered by the first try after a change that turned a check; with it, only by its turn', async () => {
    const store = new LocalStore({ clock: new ManualClock() })
    const a = localAdapter('memory', store)
    await a.commit([absent('lock')], [set('lock', 'h')])
    const answered: string[] = []
    const first = a.commit([absent('lock')], [set('lock', 'first')], { waitChange: 10_000, keepParked: true, parkOrder: 1 }).then(() => answered.push('first'))
    void a.commit([absent('lock')], [set('lock', 'kept')], { waitChange: 10_000, keepParked: true, parkOrder: 3 }).then(() => answered.push('kept'))
    void a.commit([absent('lock')], [set('lock', 'woken')], { waitChange: 10_000, parkOrder: 2 }).then((r) => answered.push(`woken ${r.ok}`))
    await tick()
    await a.commit([life('lock', 1)], [del('lock')])
    await first
    await tick()
    expect(answered.sort()).toEqual(['first', 'woken false'])
    expect(store.parked).toBe(1)
    await a.close()
  })

  test("a caller's signal that was aborted already ends the wait at once; a wait that ends (either way) leaves no listener on the signal", async () => {
    const store = new LocalStore({ clock: new ManualClock() })
    const a = localAdapter('memory', store)
    await a.commit([absent('lock')], [set('lock', 'h')])
    const gone = new AbortController()
    gone.abort()
    expect(await a.commit([absent('lock')], [set('lock', 'w')], { waitChange: 10_000, keepParked: true, signal: gone.signal })).toMatchObject({ ok: false })
    expect(store.parked).toBe(0)
    // Ended within parked.ts's `stop` itself: what stop set up is undone too (it once stayed, and the adapter's close handler with it).
    expect(getEventListeners(gone.signal, 'abort')).toHaveLength(0)
    const live = new AbortController()
    const waiting = a.commit([absent('lock')], [set('lock', 'w')], { waitChange: 10_000, keepParked: true, signal: live.signal })
    await tick()
    expect(getEventListeners(live.signal, 'abort')).toHaveLength(1)
    await a.commit([life('lock', 1)], [del('lock')])
    expect(await waiting).toMatchObject({ ok: true })
    expect(getEventListeners(live.signal, 'abort')).toHaveLength(0)
  })
})
