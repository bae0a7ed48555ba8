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

/**
 * A test clock whose timers fire synchronously as it is advanced, due ones
 * in time order: ManualClock lets promise chains settle after each timer,
 * which makes thousands of waits take seconds.
 */
class StepClock implements Clock {
  #now = 0
  #seq = 0
  readonly #timers = new Map<TimerHandle, { at: number; seq: number; fn: () => void }>()
  now(): number {
    return this.#now
  }
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const handle = {} as TimerHandle
    this.#timers.set(handle, { at: this.#now + ms, seq: this.#seq++, fn })
    return handle
  }
  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle)
  }
  get pending(): number {
    return this.#timers.size
  }
  advance(ms: number): void {
    const target = this.#now + ms
    for (;;) {
      const due = [...this.#timers].filter(([, t]) => t.at <= target).sort(([, a], [, b]) => a.at - b.at || a.seq - b.seq)
      if (due.length === 0) break
      for (const [handle, t] of due) {
        if (!this.#timers.delete(handle)) continue
        this.#now = Math.max(this.#now, t.at)
        t.fn()
      }
    }
    this.#now = target
  }
}

/** The bytes of the heap in use after a full collection (the flag set at run time: no special start of Node). */
function heapAfterGc(): number {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
  return process.memoryUsage().heapUsed
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

  test('a cascade of 3 000 handovers (each frees the key the next waits for) runs in one step, without deepening the stack', async () => {
    const { store, hold } = heldStore()
    const n = 3_000
    for (let i = 0; i <= n; i++) hold(`k${i}`, 'h')
    const takes = Array.from({ length: n }, (_, i) => parked(store, [absent(`k${i}`)], [set(`done${i}`, 'w'), del(`k${i + 1}`)], { keep: false }))
    store.commit([], [del('k0')])
    expect(store.parked).toBe(0)
    expect(store.get(`done${n - 1}`)).toBeDefined()
    await tick()
    expect(takes.filter((t) => t.answer?.ok).length).toBe(n)
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
