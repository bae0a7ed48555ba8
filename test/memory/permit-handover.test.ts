/**
 * A store that hands over with other ways (capabilities `handover` and
 * `orElse`, src/adapters/kit/parked.ts): a parked commit may go through any
 * of its ways, in order, whenever it is tried — its first try, the step of a
 * change at any key any way checks, its last try at its deadline — and is
 * judged and answered on its own checks. A semaphore's waiter parks so: a
 * released permit goes to the first waiter in line in the release's step.
 * Driven on the store itself with a ManualClock.
 */
import { describe, expect, test } from 'vitest'
import { Client, type Adapter, type Check, type CommitOptions, type CommitResult, type Op } from 'zaris'
import { ManualClock } from 'zaris/testing'
import { LocalStore } from '../../src/adapters/kit/local-store'
import { localAdapter } from '../../src/adapters/kit/local-adapter'
import { systemClock } from '../../src/core/time/clock'
import type { ParkOptions } from '../../src/adapters/kit/parked'

const set = (key: string, owner: string, ttl?: number): Op => ({ type: 'set', key, value: null, owner, ...(ttl ? { ttl } : {}) })
const del = (key: string): Op => ({ type: 'delete', key })
const absent = (key: string): Check => ({ key, revision: null })
const life = (key: string, created: number): Check => ({ key, created })
const SLOTS = ['s0', 's1', 's2']
const tick = () => new Promise((r) => setTimeout(r, 0))

type Ok = Extract<CommitResult, { ok: true }>

/** A waiter's place and its parked take of any slot (first `first`, then the others in order), as the core sends them. */
function waiter(store: LocalStore, id: string, first = 's0', park: Partial<ParkOptions> = {}) {
  const place = (store.commit([absent(`q.${id}`)], [set(`q.${id}`, id)]) as Ok).entries[0]!.created
  const way = (slot: string) => ({ checks: [absent(slot), life(`q.${id}`, place)], ops: [set(slot, id), del(`q.${id}`)] })
  const own = way(first)
  const orElse = SLOTS.filter((s) => s !== first).map(way)
  const out: { answer?: CommitResult; error?: unknown; parked: boolean; place: number } = { parked: false, place }
  const r = store.commit(own.checks, own.ops, undefined, undefined, { ms: 10_000, keep: true, order: place, orElse, onParked: () => (out.parked = true), ...park })
  if (r instanceof Promise) r.then((a) => (out.answer = a), (e) => (out.error = e))
  else out.answer = r
  return out
}

function full(store: LocalStore): number[] {
  return SLOTS.map((s) => (store.commit([absent(s)], [set(s, `h.${s}`)]) as Ok).entries[0]!.created)
}

const holders = (store: LocalStore) => SLOTS.map((s) => store.get(s)?.owner)

describe('a parked commit with other ways', () => {
  test('its first try goes through another way when its own fails: no park', async () => {
    const store = new LocalStore({ clock: new ManualClock() })
    store.commit([absent('s0')], [set('s0', 'h')])
    const w = waiter(store, 'w')
    await tick()
    expect(w.parked).toBe(false)
    expect(w.answer).toMatchObject({ ok: true, entries: [{ key: 's1', owner: 'w' }], deleted: ['q.w'] })
    expect(store.parked).toBe(0)
  })

  test('a release of any slot is handed to the first in line in its own step, then the next', async () => {
    const store = new LocalStore({ clock: new ManualClock() })
    const tokens = full(store)
    const a = waiter(store, 'a')
    const b = waiter(store, 'b', 's2')
    await tick()
    expect([a.parked, b.parked, store.parked]).toEqual([true, true, 2])
    // s2 is b's own way, a's other: a is first in line, so a gets it.
    const r = store.commit([life('s2', tokens[2]!)], [del('s2')]) as Ok
    expect(store.get('s2')).toMatchObject({ owner: 'a', revision: r.revision + 1, created: r.revision + 1 })
    expect(store.parked).toBe(1)
    store.commit([life('s0', tokens[0]!)], [del('s0')])
    expect(holders(store)).toEqual(['b', 'h.s1', 'a'])
    await tick()
    expect(a.answer).toMatchObject({ ok: true, entries: [{ key: 's2', owner: 'a' }] })
    expect(b.answer).toMatchObject({ ok: true, entries: [{ key: 's0', owner: 'b' }] })
  })

  test('never more than the slots: a waiter behind stays parked while every slot is held', async () => {
    const store = new LocalStore({ clock: new ManualClock() })
    const tokens = full(store)
    const ws = ['a', 'b', 'c', 'd'].map((id) => waiter(store, id))
    store.commit([life('s1', tokens[1]!)], [del('s1')])
    await tick()
    expect(holders(store)).toEqual(['h.s0', 'a', 'h.s2'])
    expect(ws.map((w) => w.answer?.ok)).toEqual([true, undefined, undefined, undefined])
    expect(store.parked).toBe(3)
  })

  test('a waiter that left the line (its place deleted) is answered with its failure and never granted', async () => {
    const store = new LocalStore({ clock: new ManualClock() })
    const tokens = full(store)
    const a = waiter(store, 'a')
    const b = waiter(store, 'b')
    // a gives up in the same tick as the release, before it: its place goes first.
    store.commit([life('q.a', a.place)], [del('q.a')])
    store.commit([life('s1', tokens[1]!)], [del('s1')])
    await tick()
    expect(a.answer).toMatchObject({ ok: false })
    expect(store.get('s1')).toMatchObject({ owner: 'b' })
    expect(b.answer).toMatchObject({ ok: true, entries: [{ key: 's1' }] })
  })

  test('an abort (its wait ended) in the same tick as the release: not granted, the next in line is', async () => {
    const store = new LocalStore({ clock: new ManualClock() })
    const tokens = full(store)
    let end: (() => void) | undefined
    const a = waiter(store, 'a', 's0', { stop: (e) => ((end = e), () => {}) })
    const b = waiter(store, 'b')
    end!()
    store.commit([life('s0', tokens[0]!)], [del('s0')])
    await tick()
    expect(a.answer).toMatchObject({ ok: false, failed: [{ key: 's0' }] })
    expect(store.get('s0')).toMatchObject({ owner: 'b' })
  })

  test('an expiry hands a slot over', async () => {
    const clock = new ManualClock()
    const store = new LocalStore({ clock })
    store.commit([absent('s0')], [set('s0', 'h0')])
    store.commit([absent('s1')], [set('s1', 'h1', 500)])
    store.commit([absent('s2')], [set('s2', 'h2')])
    const a = waiter(store, 'a', 's0', { ms: 1_000 })
    await clock.advance(600)
    await tick()
    expect(a.answer).toMatchObject({ ok: true, entries: [{ key: 's1', owner: 'a' }] })
  })

  test('a change at a key only another way checks tries it', async () => {
    const store = new LocalStore({ clock: new ManualClock() })
    const tokens = full(store)
    const a = waiter(store, 'a', 's0')
    store.commit([life('s2', tokens[2]!)], [del('s2')])
    await tick()
    expect(a.answer).toMatchObject({ ok: true, entries: [{ key: 's2' }] })
  })

  test('a take that fails at a key its wake owner holds is answered at once, not parked (and one that fails elsewhere too parks)', async () => {
    const store = new LocalStore({ clock: new ManualClock() })
    store.commit([absent('g')], [set('g', 'grp')])
    store.commit([absent('x')], [set('x', 'h')])
    const park = (checks: Check[]) => store.commit(checks, [set('z', 'w')], undefined, undefined, { ms: 10_000, keep: true, wakeOwner: 'grp' })
    // One failed check at the group's key, one at a key nobody holds (no entry to read an owner from).
    const woken = park([{ key: 'none', revision: 5 }, absent('g')])
    expect(woken).toBeInstanceOf(Promise)
    expect(await woken).toMatchObject({ ok: false, failed: [{ key: 'none' }, { key: 'g', entry: { owner: 'grp' } }] })
    expect(store.parked).toBe(0)
    const kept = park([absent('x')])
    await tick()
    expect(store.parked).toBe(1)
    store.commit([life('x', 2)], [del('x')])
    expect(await kept).toMatchObject({ ok: true })
  })
})

/** A memory adapter whose commits' options are kept, declaring `orElse` or not. */
function watched(orElse: boolean): { adapter: Adapter; sent: Array<CommitOptions | undefined> } {
  const inner = localAdapter('memory', new LocalStore({ clock: systemClock }))
  const sent: Array<CommitOptions | undefined> = []
  const adapter: Adapter = {
    ...inner,
    name: inner.name,
    capabilities: { ...inner.capabilities, orElse },
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    watch: (p, s, f) => inner.watch(p, s, f),
    close: () => inner.close(),
    commit: (c, o, options) => (sent.push(options), inner.commit(c, o, options)),
  }
  return { adapter, sent }
}

/** Fills a semaphore of `limit`, has a waiter wait, frees one permit: the permit the waiter got. */
async function waitOne(adapter: Adapter, limit: number) {
  const [h, w] = [new Client(adapter, { id: 'h' }), new Client(adapter, { id: 'w' })]
  const held = await Promise.all(Array.from({ length: limit }, () => h.semaphores.acquire('sem', { limit, ttl: 20_000 })))
  const waiting = w.semaphores.acquire('sem', { limit, ttl: 20_000, wait: 10_000 })
  await new Promise((r) => setTimeout(r, 30))
  await held[limit - 1]!.release()
  const permit = await waiting
  await Promise.all([h.close(), w.close()])
  return permit
}

describe('which permit waiters park with other ways', () => {
  test('on a store with capability orElse and a limit of at most 32: the take parks with a way for every other slot', async () => {
    const { adapter, sent } = watched(true)
    expect(await waitOne(adapter, 32)).not.toBeNull()
    expect(sent.some((o) => o?.orElse?.length === 31)).toBe(true)
  })

  test('a limit over 32, or a store without orElse: no other ways are sent, and the waiter is served all the same', async () => {
    for (const [orElse, limit] of [[true, 33], [false, 3]] as const) {
      const { adapter, sent } = watched(orElse)
      expect(await waitOne(adapter, limit)).not.toBeNull()
      expect(sent.filter((o) => o?.orElse !== undefined)).toEqual([])
    }
  })
})


describe('a permit won after a long wait', () => {
  test('keeps most of its TTL: a take parks at most a quarter of the TTL, then is sent again, so the grant is counted from a recent send', async () => {
    const adapter = localAdapter('memory', new LocalStore({ clock: systemClock }))
    const [h, w] = [new Client(adapter, { id: 'h' }), new Client(adapter, { id: 'w' })]
    const ttl = 800
    const held = (await h.semaphores.acquire('sem', { limit: 1, ttl: 30_000 }))!
    const waiting = w.semaphores.acquire('sem', { limit: 1, ttl, autoRenew: false, wait: 10_000 })
    // Three quarters of the TTL into the wait: a take parked since it began would be granted with a quarter left.
    await new Promise((r) => setTimeout(r, 600))
    await held.release()
    const permit = (await waiting)!
    await new Promise((r) => setTimeout(r, 400))
    expect(permit.held).toBe(true)
    await Promise.all([h.close(), w.close()])
  })
})
