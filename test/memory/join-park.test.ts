/**
 * One call that joins the line and parks the take (`CommitOptions.place`,
 * capability `parkPlace`, src/adapters/kit/join-park.ts), on the memory
 * adapter: the place is written only if the take parks, the take checks it
 * and deletes it when it goes through, and a waiter that gives up before it
 * knows whether its place was written (it sets the key with `fresh`) is
 * never granted — whichever of its leave and its take's place the store
 * saw first. Then the same through the client: a waiter giving up in every
 * gap of its one call, and a contended success costing that call and the
 * release.
 */
import { describe, expect, test } from 'vitest'
import { Client, type Adapter, type Check, type CommitOptions, type CommitResult, type Op } from 'zaris'
import { LocalStore } from '../../src/adapters/kit/local-store'
import { localAdapter } from '../../src/adapters/kit/local-adapter'
import { systemClock } from '../../src/core/time/clock'
import { QUEUE_PREFIX } from '../../src/core/contract/reserved'
import { joinThenPark } from '../../src/adapters/kit/join-park'

const set = (key: string, owner: string) => ({ type: 'set' as const, key, value: null, owner })
const del = (key: string): Op => ({ type: 'delete', key })
const absent = (key: string): Check => ({ key, revision: null })
const place = (id: string) => ({ key: `${QUEUE_PREFIX}lock\u0001${id}`, value: 'exclusive', ttl: 20_000, owner: id })
const joinPark = (a: Adapter, id: string, extra: CommitOptions = {}) => a.commit([absent('lock')], [set('lock', id)], { waitChange: 10_000, keepParked: true, place: place(id), ...extra })
const places = (store: LocalStore) => store.list(QUEUE_PREFIX).entries
const tick = () => new Promise((r) => setTimeout(r, 0))

function memory() {
  const store = new LocalStore({ clock: systemClock })
  return { store, a: localAdapter('memory', store) }
}

describe('the store writes the place as it parks the take', () => {
  test('a free key: taken at once, no place written, one revision', async () => {
    const { store, a } = memory()
    const r = await joinPark(a, 'w')
    expect(r.ok).toBe(true)
    expect(store.revision).toBe(1)
    expect(places(store)).toEqual([])
  })

  test('a held key: the place is written, the take parks, and the release hands over deleting the place in the same step', async () => {
    const { store, a } = memory()
    await a.commit([], [set('lock', 'h')])
    const answer = joinPark(a, 'w')
    await tick()
    expect(store.parked).toBe(1)
    const [p] = places(store)
    expect(p).toMatchObject({ key: place('w').key, owner: 'w', value: 'exclusive' })
    expect(p!.ttl).toBeGreaterThan(19_000)
    store.commit([], [del('lock')])
    expect(store.get('lock')?.owner).toBe('w')
    expect(places(store)).toEqual([])
    const r = (await answer) as Extract<CommitResult, { ok: true }>
    expect(r.deleted).toContain(place('w').key)
  })

  test('in the order the places were written, whatever else', async () => {
    const { store, a } = memory()
    await a.commit([], [set('lock', 'h')])
    const answers = ['x', 'y', 'z'].map((id) => joinPark(a, id))
    await tick()
    expect(store.parked).toBe(3)
    const order = places(store).sort((p, q) => p.created - q.created).map((p) => p.owner)
    const got: string[] = []
    for (let i = 0; i < 3; i++) {
      store.commit([], [del('lock')])
      got.push(store.get('lock')!.owner!)
    }
    expect(got).toEqual(order)
    await Promise.all(answers)
  })

  test('a waiter that left before its place was written (the key set with fresh): nothing is parked, the failure names the place', async () => {
    const { store, a } = memory()
    await a.commit([], [set('lock', 'h')])
    await a.commit([], [{ ...set(place('w').key, 'w'), fresh: true }])
    const r = await joinPark(a, 'w')
    expect(r.ok).toBe(false)
    expect((r as Extract<CommitResult, { ok: false }>).failed.map((f) => f.key)).toEqual(['lock', place('w').key])
    expect(store.parked).toBe(0)
    store.commit([], [del('lock')])
    expect(store.get('lock')).toBeUndefined()
  })

  test('a waiter that left after its take parked: the take fails on its place and is never applied', async () => {
    const { store, a } = memory()
    await a.commit([], [set('lock', 'h')])
    const answer = joinPark(a, 'w')
    await tick()
    expect(store.parked).toBe(1)
    await a.commit([], [{ ...set(place('w').key, 'w'), fresh: true }])
    const r = await answer
    expect(r.ok).toBe(false)
    expect((r as Extract<CommitResult, { ok: false }>).failed.map((f) => f.key)).toContain(place('w').key)
    store.commit([], [del('lock')])
    expect(store.get('lock')).toBeUndefined()
  })

  test('the wait runs out: the failure does not name the place, which stays for the waiter to keep', async () => {
    const { store, a } = memory()
    await a.commit([], [set('lock', 'h')])
    const r = await a.commit([absent('lock')], [set('lock', 'w')], { waitChange: 30, keepParked: true, place: place('w') })
    expect(r.ok).toBe(false)
    expect((r as Extract<CommitResult, { ok: false }>).failed.map((f) => f.key)).toEqual(['lock'])
    expect(places(store).map((p) => p.owner)).toEqual(['w'])
  })

  test('the key freed between the plain try and the place: the take goes through at its own first try, deleting the place', async () => {
    const { store, a } = memory()
    await a.commit([], [set('lock', 'h')])
    let writes = 0
    // The store's own commits, with the holder's release slipped in right after the place is written.
    const step = async (c: Check[], o: Op[], opts: CommitOptions | undefined) => {
      const r = await a.commit(c, o, opts)
      if (++writes === 2) store.commit([], [del('lock')])
      return r
    }
    const r = await joinThenPark(step, (k) => a.get(k), [absent('lock')], [set('lock', 'w')], { waitChange: 10_000, keepParked: true, place: place('w') })
    expect(r.ok).toBe(true)
    expect(store.get('lock')?.owner).toBe('w')
    expect(places(store)).toEqual([])
    expect(store.parked).toBe(0)
  })

  test("a caller's own signal still ends the parked take, along with the look's", async () => {
    const { store, a } = memory()
    await a.commit([], [set('lock', 'h')])
    const stop = new AbortController()
    const answer = joinThenPark((c, o, opts) => a.commit(c, o, opts), (k) => a.get(k), [absent('lock')], [set('lock', 'w')], { waitChange: 10_000, keepParked: true, place: place('w'), signal: stop.signal })
    await tick()
    expect(store.parked).toBe(1)
    stop.abort()
    // At once, not at the end of its wait.
    expect(store.parked).toBe(0)
    const r = await answer
    expect(r.ok).toBe(false)
    store.commit([], [del('lock')])
    expect(store.get('lock')).toBeUndefined()
  })

  test('a look that fails (the store unreachable): the take is answered with its failure, its place kept for the waiter', async () => {
    const { store, a } = memory()
    await a.commit([], [set('lock', 'h')])
    const r = await joinThenPark((c, o, opts) => a.commit(c, o, opts), () => Promise.reject(new Error('unreachable')), [absent('lock')], [set('lock', 'w')], { waitChange: 10_000, keepParked: true, place: place('w') })
    expect(r.ok).toBe(false)
    expect(store.parked).toBe(0)
    expect(places(store).map((p) => p.owner)).toEqual(['w'])
    store.commit([], [del('lock')])
    expect(store.get('lock')).toBeUndefined()
  })

  test('without waitChange the place is not used: a plain commit', async () => {
    const { store, a } = memory()
    await a.commit([], [set('lock', 'h')])
    const r = await a.commit([absent('lock')], [set('lock', 'w')], { place: place('w') })
    expect(r.ok).toBe(false)
    expect(places(store)).toEqual([])
  })
})

/** `n` microtask hops, or a macrotask for -1. */
async function hops(n: number): Promise<void> {
  if (n < 0) return new Promise((r) => setTimeout(r, 0))
  for (let i = 0; i < n; i++) await Promise.resolve()
}

describe('through the client', () => {
  test('a waiter giving up in every gap of its one call, and in the tick of the handover: never holding, nothing of it left in the store', async () => {
    const store = new LocalStore({ clock: systemClock })
    const h = new Client(localAdapter('memory', store), { id: 'h' })
    const w = new Client(localAdapter('memory', store), { id: 'w' })
    let granted = 0
    const owners: string[] = []
    store.watch('lock', { event: (ev) => ev.type === 'put' && owners.push(ev.owner!), error: () => {} })
    try {
      for (let round = 0; round < 36; round++) {
        const t0 = Date.now()
        owners.length = 0
        const held = (await h.locks.acquire('lock', { ttl: 20_000 }))!
        const stop = new AbortController()
        const waiting = w.locks.acquire('lock', { ttl: 20_000, wait: 10_000, signal: stop.signal }).then(
          (lock) => ({ lock }),
          (err: unknown) => ({ err }),
        )
        const gap = [0, 1, 2, 3, 4, 6, 8, 12, 16, 24, -1, -1][round % 12]!
        if (round % 2 === 0) {
          // The abort races the call itself: before, between or after its plain try, its place and its park.
          await hops(gap)
          stop.abort(new Error('gave up'))
          await held.release()
        } else {
          while (store.parked !== 1) await hops(-1)
          const releasing = held.release()
          if (store.get('lock')?.owner === 'w') granted++
          await hops(gap)
          stop.abort(new Error('gave up'))
          await releasing
        }
        const r = await waiting
        // Given up before the release: never granted, not even for a moment.
        if (round % 2 === 0) expect(owners, `round ${round}: granted to the waiter that gave up`).toEqual(['h'])
        if ('lock' in r) await r.lock!.release()
        for (let i = 0; i < 50 && (store.get('lock') !== undefined || places(store).length > 0 || store.parked > 0); i++) await hops(-1)
        expect(store.get('lock'), `round ${round}: the waiter that gave up still holds the lock`).toBeUndefined()
        expect(places(store), `round ${round}: a place or a leave is left`).toEqual([])
        expect(store.parked).toBe(0)
        // The caller gives up at once, whatever its take is doing at the store.
        expect(Date.now() - t0, `round ${round}: the abort took its take's whole wait`).toBeLessThan(2_000)
      }
    } finally {
      await Promise.all([h.close(), w.close()])
    }
    expect(granted).toBeGreaterThan(0)
  }, 60_000)

  test('a contended success is two calls: the take that joins and parks, and the release', async () => {
    const store = new LocalStore({ clock: systemClock })
    const calls = { commit: 0, other: 0 }
    const counted = (inner: Adapter): Adapter =>
      new Proxy(inner, {
        get(target, p) {
          const v = Reflect.get(target, p, target) as unknown
          if (typeof v !== 'function') return v
          return (...args: unknown[]) => {
            if (p === 'commit') calls.commit++
            else if (p !== 'close') calls.other++
            return (v as (...a: unknown[]) => unknown).apply(target, args)
          }
        },
      })
    const clients = ['a', 'b', 'c'].map((id) => new Client(counted(localAdapter('memory', store)), { id }))
    let successes = 0
    const until = Date.now() + 400
    await Promise.all(
      clients.map(async (c) => {
        while (Date.now() < until) {
          const lock = await c.locks.acquire('lock', { ttl: 20_000, wait: 5_000 })
          successes++
          await lock!.release()
        }
      }),
    )
    await Promise.all(clients.map((c) => c.close()))
    expect(successes).toBeGreaterThan(30)
    // The first contended acquire of each client tries plainly first (it does not know the key is contended yet).
    expect(calls.commit / successes).toBeLessThan(2.2)
    expect(calls.other).toBeLessThanOrEqual(clients.length * 2)
  })
})
