/**
 * The store's handover of parked takes (src/adapters/kit/parked.ts), pinned
 * down where Stryker found it unguarded (RELIABILITY.md, "Mutation score"):
 * the turns a waiter keeps between two parks (who they hold back, when they
 * end, how many are kept), `wakeOwner`, the bookkeeping of a parked commit
 * (its timers, its answer, what the store keeps of it once answered). Driven
 * on the local store with a ManualClock, as handover.test.ts and
 * turns.test.ts are; fast enough for every mutant to run it.
 */
import { getEventListeners } from 'node:events'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, test } from 'vitest'
import type { Check, CommitResult, Op } from 'zaris'
import { ManualClock } from 'zaris/testing'
import { LocalStore } from '../../src/adapters/kit/local-store'
import { localAdapter } from '../../src/adapters/kit/local-adapter'
import { MAX_TURNS, TURN_KEPT_MS, type ParkOptions } from '../../src/adapters/kit/parked'
import type { Clock, TimerHandle } from '../../src/core/time/clock'

type Success = Extract<CommitResult, { ok: true }>

const set = (key: string, owner?: string, ttl?: number): Op => ({ type: 'set', key, value: null, ...(owner ? { owner } : {}), ...(ttl ? { ttl } : {}) })
const del = (key: string): Op => ({ type: 'delete', key })
const absent = (key: string): Check => ({ key, revision: null })
const life = (key: string, created: number): Check => ({ key, created })
const tick = () => new Promise((r) => setTimeout(r, 0))

/** A commit that may park, and what became of it. */
function parked(store: LocalStore, checks: Check[], ops: Op[], park: Partial<ParkOptions> = {}) {
  const out: { answer?: CommitResult; error?: unknown; parked: boolean } = { parked: false }
  const r = store.commit(checks, ops, undefined, undefined, { ms: 10_000, keep: true, ...park, onParked: () => (out.parked = true) })
  if (r instanceof Promise) r.then((a) => (out.answer = a), (e: unknown) => (out.error = e))
  else out.answer = r
  return out
}

/** A waiter's place in line (`q.<id>`), then its take of `locks`, parked as the core sends it; `again` sends the take once more. */
function waiter(store: LocalStore, id: string, ms: number, locks = ['lock'], park: Partial<ParkOptions> = {}) {
  const place = (store.commit([absent(`q.${id}`)], [set(`q.${id}`, id)]) as Success).entries[0]!.created
  const again = (more: Partial<ParkOptions> = {}) =>
    parked(store, [...locks.map(absent), life(`q.${id}`, place)], [...locks.map((l) => set(l, id)), del(`q.${id}`)], { order: place, ms, ...park, ...more })
  return { place, take: again(), again, giveUp: () => store.commit([life(`q.${id}`, place)], [del(`q.${id}`)]) }
}

/** The store with `lock` held by `h` (no TTL: no expiry timer of its own), and its release. */
function heldStore(clock: Clock = new ManualClock()) {
  const store = new LocalStore({ clock })
  const owned = (key: string) => store.get(key)?.owner
  const hold = (key: string, owner: string) => (store.commit([absent(key)], [set(key, owner)]) as Success).entries[0]!.created
  const held = hold('lock', 'h')
  const release = (key = 'lock') => store.commit([life(key, store.get(key)!.created)], [del(key)])
  return { store, owned, hold, held, release }
}

describe('a turn kept between two parks', () => {
  test('holds the lock for its waiter against the one behind; its waiter back, the turn is gone and no timer is left', async () => {
    const clock = new ManualClock()
    const { store, owned, release } = heldStore(clock)
    const first = waiter(store, 'first', 100)
    const second = waiter(store, 'second', 10_000)
    await clock.advance(100)
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
    const clock = new ManualClock()
    const { store, owned, release } = heldStore(clock)
    waiter(store, 'first', 100)
    const second = waiter(store, 'second', 10_000)
    await clock.advance(100)
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
    const clock = new ManualClock()
    const { store, owned, release } = heldStore(clock)
    const first = waiter(store, 'first', 100)
    const second = waiter(store, 'second', 10_000)
    await clock.advance(100)
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
    const clock = new ManualClock()
    const { store, owned, hold, release } = heldStore(clock)
    const first = waiter(store, 'first', 100)
    const second = waiter(store, 'second', 10_000)
    await clock.advance(100)
    release()
    hold('lock', 'plain')
    release()
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
    const clock = new ManualClock()
    const { store, owned, release } = heldStore(clock)
    const first = waiter(store, 'first', 100)
    const second = waiter(store, 'second', 10_000)
    await clock.advance(100)
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
})

describe("a parked commit's bookkeeping", () => {
  test('a wait ended at once by a signal aborted already leaves nothing on the signal (a bug: what `stop` set up stayed, the adapter\'s close handler too)', async () => {
    const store = new LocalStore({ clock: new ManualClock() })
    const a = localAdapter('memory', store)
    await a.commit([absent('lock')], [set('lock', 'h')])
    const gone = new AbortController()
    gone.abort()
    expect(await a.commit([absent('lock')], [set('lock', 'w')], { waitChange: 10_000, keepParked: true, signal: gone.signal })).toMatchObject({ ok: false })
    expect(getEventListeners(gone.signal, 'abort')).toHaveLength(0)
    await a.close()
    expect(store.parked).toBe(0)
  })
})
