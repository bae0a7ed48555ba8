/**
 * The turn a waiter keeps between two parks at a store that hands over
 * (src/adapters/kit/parked.ts): whom it holds back, when it ends, how many
 * are kept. Written from the mutants Stryker left alive (RELIABILITY.md,
 * "Mutation score"); turns.test.ts has the first cases and real clients.
 * On the local store with a ManualClock (a StepClock where thousands of
 * timers fire).
 */
import { describe, expect, test } from 'vitest'
import type { Op } from 'zaris'
import { ManualClock } from 'zaris/testing'
import { StoreQuota } from '../../src/adapters/kit/local-store'
import { MAX_TURNS, TURN_KEPT_MS } from '../../src/adapters/kit/parked'
import { absent, del, heldStore, life, parked, set, StepClock, tick, waiter } from './parking'

/** The lock held by `h`; `first` in line (its take of `locks` waits 100 ms), `second` behind it (10 s); first's wait has run out: its turn is kept. */
async function between(locks = ['lock']) {
  const clock = new ManualClock()
  const held = heldStore(clock)
  const first = waiter(held.store, 'first', 100, locks)
  const second = waiter(held.store, 'second', 10_000)
  await clock.advance(100)
  return { clock, ...held, first, second }
}

describe('a turn kept between two parks', () => {
  test("holds back another waiter's other way (orElse) too: a permit freed at a slot the turn's waiter could take stays its", async () => {
    const clock = new ManualClock()
    const { store, owned, hold, release } = heldStore(clock)
    hold('slot1', 'h2')
    // Permit waiters' takes: slot 'lock' (their own), or else 'slot1', each way checking and deleting its place.
    const firstPlace = (store.commit([absent('q.first')], [set('q.first', 'first')]) as { entries: Array<{ created: number }> }).entries[0]!.created
    const way = (id: string, place: number) => [{ checks: [absent('slot1'), life(`q.${id}`, place)], ops: [set('slot1', id), del(`q.${id}`)] }]
    const first = parked(store, [absent('lock'), life('q.first', firstPlace)], [set('lock', 'first'), del('q.first')], { order: firstPlace, ms: 100, orElse: way('first', firstPlace) })
    const secondPlace = (store.commit([absent('q.second')], [set('q.second', 'second')]) as { entries: Array<{ created: number }> }).entries[0]!.created
    const second = parked(store, [absent('lock'), life('q.second', secondPlace)], [set('lock', 'second'), del('q.second')], { order: secondPlace, ms: 10_000, orElse: way('second', secondPlace) })
    await clock.advance(100)
    expect(first.answer).toMatchObject({ ok: false })
    expect(store.turns).toBe(1)
    // slot1 frees while first is between its parks: its turn holds second's other way back.
    release('slot1')
    expect(owned('slot1')).toBeUndefined()
    expect(second.answer).toBeUndefined()
    // First is back: its other way takes slot1 at once; second stays parked.
    const back = parked(store, [absent('lock'), life('q.first', firstPlace)], [set('lock', 'first'), del('q.first')], { order: firstPlace, ms: 10_000, orElse: way('first', firstPlace) })
    expect(owned('slot1')).toBe('first')
    await tick()
    expect(back.answer).toMatchObject({ ok: true })
    expect(second.answer).toBeUndefined()
    release()
    expect(owned('lock')).toBe('second')
  })

  test('holds the lock for its waiter against the one behind; its waiter back, the turn is gone and no timer is left', async () => {
    const { clock, store, owned, release, first, second } = await between()
    expect(first.take.answer).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
    expect(store.turns).toBe(1)
    release()
    expect(owned('lock')).toBeUndefined()
    const next = first.again()
    expect(owned('lock')).toBe('first')
    expect(store.turns).toBe(0)
    await tick()
    expect(next.answer).toMatchObject({ ok: true })
    expect(second.take.answer).toBeUndefined()
    release()
    expect(owned('lock')).toBe('second')
    await tick()
    expect(store.parked).toBe(0)
    expect(clock.pending).toBe(0)
  })

  test(`ends after ${TURN_KEPT_MS} ms: what it held back goes through then, and its timer is gone`, async () => {
    const { clock, store, owned, release, second } = await between()
    release()
    await clock.advance(TURN_KEPT_MS - 1)
    expect(owned('lock')).toBeUndefined()
    await clock.advance(1)
    expect(owned('lock')).toBe('second')
    expect(store.turns).toBe(0)
    expect(second.take.answer).toMatchObject({ ok: true })
    expect(clock.pending).toBe(0)
  })

  test('ends in the step its waiter gives up (deletes its place): the one behind holds before the give-up returns; with nothing parked, too', async () => {
    const { clock, store, owned, release, first, second } = await between()
    release()
    first.giveUp()
    expect(owned('lock')).toBe('second')
    expect(store.turns).toBe(0)
    // Nothing parked at all: a give-up still ends the turn.
    const lone = waiter(store, 'lone', 100)
    await clock.advance(100)
    expect(store.parked).toBe(0)
    expect(store.turns).toBe(1)
    lone.giveUp()
    expect(store.turns).toBe(0)
    expect(clock.pending).toBe(0)
  })

  test('of a take of two locks, one free when it parked: ends when its waiter gives up, though the free lock is still free', async () => {
    const { store, owned, release, first, second } = await between(['lock', 'b'])
    expect(store.turns).toBe(1)
    release()
    first.giveUp()
    expect(owned('lock')).toBe('second')
    expect(store.turns).toBe(0)
  })

  test('holds back only higher orders, at its keys: a waiter ahead of it, its own order, another lock and a plain commit go through', async () => {
    const clock = new ManualClock()
    const { store, owned, release } = heldStore(clock)
    const ahead = waiter(store, 'ahead', 10_000)
    const first = waiter(store, 'first', 100)
    // A second take of the same waiter (same order), parked before the turn: the turn is its own.
    const same = parked(store, [absent('lock')], [set('lock', 'same')], { order: first.place })
    await clock.advance(100)
    expect(store.turns).toBe(1)
    release()
    expect(owned('lock')).toBe('ahead')
    await tick()
    expect(ahead.take.answer).toMatchObject({ ok: true })
    release()
    expect(owned('lock')).toBe('same')
    await tick()
    expect(same.answer).toMatchObject({ ok: true })
    const other = parked(store, [absent('other')], [set('other', 'x')], { order: first.place + 1_000 })
    expect(other.answer).toMatchObject({ ok: true })
  })

  test("a plain commit's hold and release meanwhile do not end it: the release still goes to nobody, the waiter back gets it", async () => {
    const { store, owned, hold, release, first, second } = await between()
    release()
    hold('lock', 'plain')
    release()
    // Its place renewed (rewritten in the same life): still its place.
    store.commit([life('q.first', first.place)], [set('q.first', 'first')])
    expect(owned('lock')).toBeUndefined()
    expect(store.turns).toBe(1)
    first.again()
    expect(owned('lock')).toBe('first')
    expect(second.take.answer).toBeUndefined()
  })

  test('two turns at one lock, the line interleaved (a, c, b, d; a and b between parks): each holds back only those behind it', async () => {
    const clock = new ManualClock()
    const { store, owned, release } = heldStore(clock)
    const a = waiter(store, 'a', 100)
    const c = waiter(store, 'c', 10_000)
    const b = waiter(store, 'b', 100)
    const d = waiter(store, 'd', 10_000)
    await clock.advance(100)
    expect(store.turns).toBe(2)
    release()
    expect(owned('lock')).toBeUndefined()
    a.giveUp()
    expect(owned('lock')).toBe('c')
    release()
    expect(owned('lock')).toBeUndefined()
    b.again()
    expect(owned('lock')).toBe('b')
    release()
    expect(owned('lock')).toBe('d')
    await tick()
    expect([c.take.answer?.ok, d.take.answer?.ok]).toEqual([true, true])
  })

  test('a take that comes while an earlier turn is kept waits though the lock is free; its wait ending then is answered with no check failed', async () => {
    const clock = new ManualClock()
    const { store, owned, release } = heldStore(clock)
    waiter(store, 'first', 100)
    await clock.advance(100)
    release()
    const late = waiter(store, 'late', 50)
    expect(late.take.parked).toBe(true)
    await clock.advance(50)
    expect(late.take.answer).toEqual({ ok: false, failed: [] })
    expect(owned('lock')).toBeUndefined()
  })

  test('a waiter whose take is parked twice (sent again, the first still parked) keeps one turn, gone in time: no trace of it holds the line later', async () => {
    const clock = new ManualClock()
    const { store, owned, release } = heldStore(clock)
    const first = waiter(store, 'first', 100)
    first.again({ ms: 200 })
    const second = waiter(store, 'second', 10_000)
    await clock.advance(200)
    expect(store.turns).toBe(1)
    await clock.advance(TURN_KEPT_MS)
    expect(store.turns).toBe(0)
    // A turn kept at another lock: the line at this one is as before.
    store.commit([], [set('other', 'x')])
    waiter(store, 'elsewhere', 100, ['other'])
    await clock.advance(100)
    expect(store.turns).toBe(1)
    release()
    expect(owned('lock')).toBe('second')
    await tick()
    expect(second.take.answer).toMatchObject({ ok: true })
  })

  test('a wait that runs out keeps no turn unless it is kept and ordered', async () => {
    const clock = new ManualClock()
    const { store, owned, release } = heldStore(clock)
    const unkept = waiter(store, 'unkept', 100, ['lock'], { keep: false })
    parked(store, [absent('lock')], [set('lock', 'unordered')], { ms: 100 })
    const next = waiter(store, 'next', 10_000)
    await clock.advance(100)
    expect(unkept.take.answer).toMatchObject({ ok: false })
    expect(store.turns).toBe(0)
    release()
    expect(owned('lock')).toBe('next')
  })

  test("the store's close ends every turn and leaves no timer", async () => {
    const clock = new ManualClock()
    const { store } = heldStore(clock)
    waiter(store, 'first', 100)
    await clock.advance(100)
    expect(store.turns).toBe(1)
    store.close()
    expect(store.turns).toBe(0)
    expect(clock.pending).toBe(0)
  })

  test('a waiter back whose take parks again ends its turn: if its wait then ends (its adapter closed), the next release goes to the one behind', async () => {
    const { store, owned, release, first, second } = await between()
    let end!: () => void
    const back = first.again({ ms: 10_000, stop: (e) => ((end = e), () => {}) })
    expect(back.parked).toBe(true)
    expect(store.turns).toBe(0)
    end()
    release()
    expect(owned('lock')).toBe('second')
    await tick()
    expect(second.take.answer).toMatchObject({ ok: true })
  })

  test('a waiter back whose take of two locks parks again (one is still held): the one behind it at the free lock holds in that step (a bug: it waited for its own wait to end)', async () => {
    const clock = new ManualClock()
    const { store, owned, hold, release } = heldStore(clock)
    hold('b', 'hb')
    const first = waiter(store, 'first', 100, ['lock', 'b'])
    const second = waiter(store, 'second', 10_000)
    await clock.advance(100)
    release()
    expect(owned('lock')).toBeUndefined()
    const back = first.again({ ms: 10_000 })
    expect(back.parked).toBe(true)
    expect(owned('lock')).toBe('second')
    await tick()
    expect(second.take.answer).toMatchObject({ ok: true })
  })

  test('a waiter back whose take fails to write (the store is full) ends its turn: the one behind, its checks holding, holds in that step', async () => {
    const clock = new ManualClock()
    const { store, owned, release } = heldStore(clock, new StoreQuota(400))
    const first = waiter(store, 'first', 100)
    const second = waiter(store, 'second', 500)
    await clock.advance(100)
    release()
    const big: Op = { type: 'set', key: 'lock', value: 'x'.repeat(500) }
    expect(() => store.commit([absent('lock'), life('q.first', first.place)], [big], undefined, undefined, { ms: 100, keep: true, order: first.place })).toThrow(
      expect.objectContaining({ code: 'TOO_LARGE' }),
    )
    expect(store.turns).toBe(0)
    expect(owned('lock')).toBe('second')
    await tick()
    expect(second.take.answer).toMatchObject({ ok: true })
  })

  test('a waiter back whose take is refused without parking (no wait left) ends its turn: the one behind holds in that step', async () => {
    const clock = new ManualClock()
    const { store, owned, release, hold } = heldStore(clock)
    const first = waiter(store, 'first', 100)
    const second = waiter(store, 'second', 500)
    await clock.advance(100)
    release()
    hold('other', 'x')
    // Back, but checking a key held by someone else, with no wait: refused at once.
    expect(store.commit([absent('other'), life('q.first', first.place)], [set('other', 'first')], undefined, undefined, { ms: 0, keep: true, order: first.place })).toMatchObject({ ok: false })
    expect(store.turns).toBe(0)
    expect(owned('lock')).toBe('second')
    await tick()
    expect(second.take.answer).toMatchObject({ ok: true })
  })

  test(`keeps at most ${MAX_TURNS} turns at once; they end after ${TURN_KEPT_MS} ms, and more can be kept then`, () => {
    const clock = new StepClock()
    const { store } = heldStore(clock)
    const park = (i: number) => parked(store, [absent('lock')], [set('lock', `w${i}`)], { order: 1_000 + i, ms: 1 })
    for (let i = 0; i <= MAX_TURNS; i++) park(i)
    clock.advance(1)
    expect(store.parked).toBe(0)
    expect(store.turns).toBe(MAX_TURNS)
    clock.advance(TURN_KEPT_MS)
    expect(store.turns).toBe(0)
    park(MAX_TURNS + 1)
    clock.advance(1)
    expect(store.turns).toBe(1)
  })
})

