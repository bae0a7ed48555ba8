/**
 * A parked commit at a store that hands over (src/adapters/kit/parked.ts):
 * `wakeOwner` and which failed tries a kept take is answered for, and its
 * bookkeeping (what `stop` set up, its answer, `granted`, a wait's end in
 * the instant of an expiry, a cascade's depth, what the store keeps once it
 * is answered). Written from the mutants Stryker left alive (RELIABILITY.md,
 * "Mutation score"). On the local store with a ManualClock (a StepClock
 * where thousands of timers fire).
 */
import { describe, expect, test } from 'vitest'
import { ManualClock } from 'zaris/testing'
import { LocalStore } from '../../src/adapters/kit/local-store'
import { MAX_TURNS, TURN_KEPT_MS } from '../../src/adapters/kit/parked'
import { absent, del, heapAfterGc, heldStore, life, parked, set, StepClock, tick, waiter, type Success } from './parking'

describe("a parked commit's bookkeeping", () => {
  test('a commit that checks one key twice parks and is answered once', async () => {
    const { store, release } = heldStore()
    const twice = parked(store, [absent('lock'), { key: 'lock', created: null }], [set('lock', 'w')])
    expect(twice.parked).toBe(true)
    release()
    await tick()
    expect(twice.answer).toMatchObject({ ok: true })
    expect(store.parked).toBe(0)
  })

  test("a commit's answer lists what it deleted, whatever else was parked; granted counts the handovers", async () => {
    const { store, hold, release } = heldStore()
    hold('gone', 'x')
    const w1 = waiter(store, 'w1', 10_000)
    const w2 = waiter(store, 'w2', 10_000)
    expect(store.granted).toBe(0)
    const r = store.commit([], [del('gone'), set('made', 'x')]) as Success
    expect(r.deleted).toEqual(['gone'])
    release()
    await tick()
    expect(w1.take.answer).toMatchObject({ ok: true, deleted: ['q.w1'] })
    expect((w1.take.answer as Success).deleted).toEqual(['q.w1'])
    expect(store.granted).toBe(1)
    release()
    expect(store.granted).toBe(2)
    await tick()
    expect(w2.take.answer?.ok).toBe(true)
  })

  test('a wait running out in the instant its lock expires: the waiter holds, answered once, with no turn kept', async () => {
    const clock = new ManualClock()
    const store = new LocalStore({ clock })
    const held = (store.commit([absent('lock')], [set('lock', 'h', 10_000)]) as Success).entries[0]!.created
    const w = waiter(store, 'w', 1_000)
    const next = waiter(store, 'next', 10_000)
    await clock.advance(500)
    // A renewal that moves the expiry to the instant w's wait runs out (its timer comes after w's).
    store.commit([life('lock', held)], [set('lock', 'h', 500)])
    await clock.advance(500)
    expect(store.get('lock')?.owner).toBe('w')
    expect(w.take.answer).toMatchObject({ ok: true })
    expect(store.parked).toBe(1)
    expect(store.turns).toBe(0)
    store.commit([life('lock', store.get('lock')!.created)], [del('lock')])
    expect(store.get('lock')?.owner).toBe('next')
  })

  test('a cascade of handovers (each frees the key the next waits for) runs in one step and flat: the last at the stack depth of the first, so no length of it can overflow the stack', async () => {
    const { store, hold } = heldStore()
    const n = 200
    for (let i = 0; i <= n; i++) hold(`k${i}`, 'h')
    const depths: number[] = []
    const onAnswer = () => depths.push(new Error().stack!.split('\n').length)
    const takes = Array.from({ length: n }, (_, i) => parked(store, [absent(`k${i}`)], [set(`done${i}`, 'w'), del(`k${i + 1}`)], { keep: false, onAnswer }))
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = Infinity
    try {
      store.commit([], [del('k0')])
    } finally {
      Error.stackTraceLimit = limit
    }
    expect(store.parked).toBe(0)
    expect(depths).toHaveLength(n)
    expect(new Set(depths).size).toBe(1)
    await tick()
    expect(takes.filter((t) => t.answer?.ok).length).toBe(n)
  })

  test("what the store keeps is bounded by what waits now: 25 600 waits and turns at keys of their own, all ended, leave no trace in the store's heap", () => {
    const clock = new StepClock()
    const { store } = heldStore(clock)
    const round = (r: number) => {
      for (let i = 0; i < MAX_TURNS; i++) {
        const key = `key-${r}-${i}`
        void store.commit([{ key, revision: 1 }], [set(key, 'w')], undefined, undefined, { ms: 1, keep: true, order: 1 + r * MAX_TURNS + i })
      }
      clock.advance(1)
      clock.advance(TURN_KEPT_MS)
    }
    round(0)
    const before = heapAfterGc()
    for (let r = 1; r <= 100; r++) round(r)
    expect(store.parked + store.turns + clock.pending).toBe(0)
    // It grows by kilobytes; a Set left per key that had a wait or a turn costs 9 MB and more (measured).
    expect(heapAfterGc() - before).toBeLessThan(2_000_000)
  })
})

describe('wakeOwner, and which failed tries a kept take is answered for', () => {
  test('a kept take parks at an ownerless entry and stays parked through its rewrite; no wakeOwner means no owner wakes it', async () => {
    const { store, owned, hold, release } = heldStore()
    release()
    hold('lock', '')
    const w = waiter(store, 'w', 10_000)
    expect(w.take.parked).toBe(true)
    store.commit([], [set('lock')])
    await tick()
    expect(w.take.answer).toBeUndefined()
    release()
    expect(owned('lock')).toBe('w')
  })

  test('a shared waiter (wakeOwner) stays parked through a renewal by a holder that is not its group', async () => {
    const { store, owned } = heldStore()
    const reader = waiter(store, 'r', 10_000, ['lock'], { wakeOwner: 'group' })
    store.commit([life('lock', store.get('lock')!.created)], [set('lock', 'h')])
    await tick()
    expect(reader.take.answer).toBeUndefined()
    expect(owned('lock')).toBe('h')
  })

  test('a shared waiter whose place is gone: parked while a stranger holds (never applied), answered at once when its group holds', async () => {
    const clock = new ManualClock()
    const { store, owned, hold, release } = heldStore(clock)
    const place = (store.commit([], [set('q.r', 'r')]) as Success).entries[0]!.created
    store.commit([], [del('q.r')])
    const take = () => parked(store, [absent('lock'), life('q.r', place)], [set('lock', 'r'), del('q.r')], { order: place, wakeOwner: 'group', ms: 500 })
    const stranger = take()
    expect(stranger.parked).toBe(true)
    release()
    expect(owned('lock')).toBeUndefined()
    await clock.advance(500)
    expect(stranger.answer).toMatchObject({ ok: false, failed: [{ key: 'q.r', entry: undefined }] })
    hold('lock', 'group')
    const group = take()
    expect(group.parked).toBe(false)
    await tick()
    expect(group.answer).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'group' } }, { key: 'q.r' }] })
  })
})
