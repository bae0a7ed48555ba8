/**
 * A waiter keeps its turn between two parks (src/adapters/kit/parked.ts): a
 * kept, ordered take whose wait ran out is answered, and its waiter parks
 * again a round trip later; a release in between must not go to the waiter
 * behind it. Driven on the local store with a ManualClock (as
 * handover.test.ts), then with real clients whose first waiter's answers come
 * late (a slow tab, simulated by a delay in its adapter: the one fake here).
 */
import { describe, expect, test } from 'vitest'
import type { Check, CommitResult, Op } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { ManualClock } from 'zaris/testing'
import { LocalStore } from '../../src/adapters/kit/local-store'
import { MAX_TURNS, TURN_KEPT_MS, type ParkOptions } from '../../src/adapters/kit/parked'
import { firstInLineRounds } from '../setup/first-in-line'

const run = Math.random().toString(36).slice(2)

const set = (key: string, owner?: string): Op => ({ type: 'set', key, value: null, ...(owner ? { owner } : {}) })
const del = (key: string): Op => ({ type: 'delete', key })
const absent = (key: string): Check => ({ key, revision: null })
const life = (key: string, created: number): Check => ({ key, created })
const tick = () => new Promise((r) => setTimeout(r, 0))

function parked(store: LocalStore, checks: Check[], ops: Op[], park: Partial<ParkOptions>) {
  const out: { answer?: CommitResult; parked: boolean } = { parked: false }
  const r = store.commit(checks, ops, undefined, undefined, { ms: 10_000, keep: true, ...park, onParked: () => (out.parked = true) })
  if (r instanceof Promise) void r.then((a) => (out.answer = a))
  else out.answer = r
  return out
}

/** A waiter's place in line, and its take parked `ms` (parked again by `again`), as the core sends them. */
function waiter(store: LocalStore, id: string, ms: number) {
  const place = (store.commit([absent(`q.${id}`)], [set(`q.${id}`, id)]) as Extract<CommitResult, { ok: true }>).entries[0]!.created
  const take = () => parked(store, [absent('lock'), life(`q.${id}`, place)], [set('lock', id), del(`q.${id}`)], { order: place, ms })
  return { place, take: take(), again: take }
}

/** The lock held by `h`, `first` in line with a short wait, `second` behind it with a long one; `first`'s wait has just run out. */
async function between() {
  const clock = new ManualClock()
  const store = new LocalStore({ clock })
  const held = (store.commit([absent('lock')], [set('lock', 'h')]) as Extract<CommitResult, { ok: true }>).entries[0]!.created
  const first = waiter(store, 'first', 100)
  const second = waiter(store, 'second', 10_000)
  await clock.advance(100)
  await tick()
  expect(first.take.answer).toMatchObject({ ok: false, failed: [{ key: 'lock' }] })
  const release = () => store.commit([life('lock', held)], [del('lock')])
  return { clock, store, first, second, release }
}

describe('a waiter keeps its turn between two parks', () => {
  test('a release while the first waiter is between parks goes to nobody; its next take gets the lock at once, the second stays parked', async () => {
    const { store, first, second, release } = await between()
    release()
    await tick()
    expect(store.get('lock')).toBeUndefined()
    expect(second.take.answer).toBeUndefined()
    const next = first.again()
    await tick()
    expect(next.answer).toMatchObject({ ok: true })
    expect(store.get('lock')).toMatchObject({ owner: 'first' })
    expect(second.take.answer).toBeUndefined()
  })

  test(`a turn not taken up within ${TURN_KEPT_MS} ms passes: the second gets the lock then`, async () => {
    const { clock, store, second, release } = await between()
    release()
    await clock.advance(TURN_KEPT_MS - 1)
    await tick()
    expect(second.take.answer).toBeUndefined()
    await clock.advance(1)
    await tick()
    expect(second.take.answer).toMatchObject({ ok: true })
    expect(store.get('lock')).toMatchObject({ owner: 'second' })
  })

  test('a first waiter that gives up (deletes its place) ends its turn in that step: the second gets the lock', async () => {
    const { store, first, second, release } = await between()
    release()
    store.commit([], [del('q.first')])
    await tick()
    expect(second.take.answer).toMatchObject({ ok: true })
    expect(store.get('lock')).toMatchObject({ owner: 'second' })
  })

  test('a waiter that gives up with nothing else parked ends its turn: the next take goes through at once (the model found this)', async () => {
    const clock = new ManualClock()
    const store = new LocalStore({ clock })
    const held = (store.commit([absent('lock')], [set('lock', 'h')]) as Extract<CommitResult, { ok: true }>).entries[0]!.created
    const first = waiter(store, 'first', 100)
    await clock.advance(100)
    await tick()
    expect(first.take.answer).toMatchObject({ ok: false })
    expect(store.parked).toBe(0)
    store.commit([life('lock', held)], [del('lock')])
    store.commit([], [del('q.first')])
    const next = waiter(store, 'next', 10_000)
    await tick()
    expect(next.take.answer).toMatchObject({ ok: true })
  })

  test(`a peer that parks short waits fast keeps at most ${MAX_TURNS} turns; they end after ${TURN_KEPT_MS} ms`, async () => {
    const clock = new ManualClock()
    const store = new LocalStore({ clock })
    store.commit([absent('lock')], [set('lock', 'h')])
    for (let i = 0; i < MAX_TURNS + 100; i++) parked(store, [absent('lock')], [set('lock', `w${i}`)], { order: 1_000 + i, ms: 1 })
    expect(store.parked).toBe(MAX_TURNS + 100)
    await clock.advance(1)
    await tick()
    expect(store.parked).toBe(0)
    expect(store.turns).toBe(MAX_TURNS)
    await clock.advance(TURN_KEPT_MS)
    expect(store.turns).toBe(0)
  })

  test('a take that comes while an earlier turn is kept waits, though the lock is free; its wait ending meanwhile is answered with no check failed', async () => {
    const { clock, store, release } = await between()
    release()
    const late = waiter(store, 'late', 50)
    await tick()
    expect(late.take.parked).toBe(true)
    expect(store.get('lock')).toBeUndefined()
    await clock.advance(50)
    await tick()
    expect(late.take.answer).toEqual({ ok: false, failed: [] })
    expect(store.get('lock')).toBeUndefined()
  })

  test('a turn holds back only higher orders and only at its keys: a plain commit and a take of another lock go through', async () => {
    const { store, release } = await between()
    release()
    const other = parked(store, [absent('other')], [set('other', 'x')], { order: 1_000 })
    expect(other.answer).toMatchObject({ ok: true })
    expect(store.commit([absent('lock')], [set('lock', 'plain')])).toMatchObject({ ok: true })
  })
})

describe('real clients, the first waiter slow to park again (its answers 40 ms late, its park 100 ms)', () => {
  test('12 rounds: each release goes to the first in line, never to the waiter behind it', async () => {
    await firstInLineRounds(12, async (round) => memoryAdapter({ namespace: `turns-${round}-${run}` }))
  }, 30_000)
})
