/**
 * A semaphore's permit part (src/core/acquire/permit-part.ts) step by step,
 * on the real memory store with a ManualClock, under the capabilities a
 * store declares: which waiters park one take of any slot (keepParked +
 * orElse, a limit of at most 32), what each plan writes and sends, what a
 * failure teaches it, what blocks it and where that shows, and how events
 * and reads move what it knows. Both ways of waiting serve a waiter (the
 * conformance suite shows that); these say which way is taken, and what it
 * costs.
 */
import { describe, expect, test } from 'vitest'
import { Lock, type Adapter, type Capabilities, type Entry } from 'zaris'
import type { HoldInit } from '../../src/core/hold/hold'
import { PermitPart } from '../../src/core/acquire/permit-part'
import { slotPrefix } from '../../src/core/contract/reserved'
import { contextOf, freshStore } from './machine-kit'

const HANDS_OVER: Capabilities = { commitOnChange: true, keepParked: true, orElse: true }
const slot = (n: number, key = 's') => slotPrefix(key) + n

/** A part of a semaphore `s` of `limit` on a fresh memory store declaring `caps` (null: no capabilities at all); counts its lists. */
function partOf(limit: number, caps: Capabilities | null = HANDS_OVER) {
  const { clock, raw } = freshStore()
  const inner = raw()
  const seen = { lists: 0 }
  const adapter: Adapter = new Proxy(inner, {
    get(target, p) {
      if (p === 'capabilities') return caps ?? undefined
      if (p === 'list') return (...a: Parameters<Adapter['list']>) => (seen.lists++, target.list(...a))
      const v = Reflect.get(target, p, target) as unknown
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  })
  const ctx = contextOf(adapter, clock, 'me')
  const spec = { value: null, ttl: 10_000, autoRenew: false, make: (init: HoldInit<null>) => new Lock(ctx, init) }
  return { part: new PermitPart(ctx, 's', limit, spec), inner, seen }
}

/** A live slot entry as the store would show it. */
const entry = (n: number, owner: string, revision: number, key = 's'): Entry => ({ key: slot(n, key), value: { limit: 3 }, revision, created: revision, owner, ttl: 10_000 })

/** Takes slots of `s` as `owner` in the store itself. */
async function take(inner: Adapter, owner: string, ...slots: number[]): Promise<Entry[]> {
  const r = await inner.commit(
    slots.map((n) => ({ key: slot(n), revision: null })),
    slots.map((n) => ({ type: 'set', key: slot(n), value: { limit: 3 }, ttl: 10_000, owner })),
  )
  if (!r.ok) throw new Error('slots taken')
  return r.entries
}

describe('which waiters park one take of any slot', () => {
  test('keepParked and orElse with a limit of at most 32: yes; without either, over 32, or with no capabilities: no', () => {
    expect(partOf(3).part.keepParked).toBe(true)
    expect(partOf(32).part.keepParked).toBe(true)
    expect(partOf(33).part.keepParked).toBe(false)
    expect(partOf(3, { ...HANDS_OVER, orElse: false }).part.keepParked).toBe(false)
    expect(partOf(3, { ...HANDS_OVER, keepParked: false }).part.keepParked).toBe(false)
    expect(partOf(3, null).part.keepParked).toBe(false)
  })

  test('such a take checks every slot below the limit and nothing else; a waiter that does not park checks none', () => {
    const { part } = partOf(3)
    expect([0, 1, 2].map((n) => part.checks(slot(n)))).toEqual([true, true, true])
    expect(part.checks(slot(3))).toBe(false)
    expect(part.checks(slot(0, 't'))).toBe(false)
    expect(part.checks('s')).toBe(false)
    expect(partOf(3, { commitOnChange: true }).part.checks(slot(0))).toBe(false)
  })

  test('it parks at most a quarter of its TTL (a permit counts its TTL from the send); a waiter that does not park, not at all', () => {
    expect(partOf(3).part.parkLimit()).toBe(2_500)
    expect(partOf(3, { commitOnChange: true }).part.parkLimit()).toBe(0)
  })

  test('its keys are its slots, whatever their number, and nothing else', () => {
    const { part } = partOf(3)
    expect(part.owns(slot(0))).toBe(true)
    expect(part.owns(slot(40))).toBe(true)
    expect(part.owns('s')).toBe(false)
    expect(part.owns(slot(0, 't'))).toBe(false)
  })
})

describe('a plan', () => {
  test('a parking try (waitChange and keepParked) takes its slot, with one other way per other slot, in order', async () => {
    const { part } = partOf(3)
    const plan = await part.plan({ waitChange: 100, keepParked: true })
    expect(plan).toMatchObject({ checks: [{ key: slot(0), revision: null }], ops: [{ type: 'set', key: slot(0), owner: 'me', value: { limit: 3 }, ttl: 10_000 }] })
    expect('orElse' in plan && plan.orElse!.map((w) => [w.checks, w.ops.map((o) => o.key)])).toEqual([
      [[{ key: slot(1), revision: null }], [slot(1)]],
      [[{ key: slot(2), revision: null }], [slot(2)]],
    ])
  })

  test('no other ways without waitChange, without keepParked, or on a store that does not park them', async () => {
    for (const [caps, how] of [
      [HANDS_OVER, { keepParked: true }],
      [HANDS_OVER, { waitChange: 100 }],
      [HANDS_OVER, {}],
      [{ commitOnChange: true, keepParked: true }, { waitChange: 100, keepParked: true }],
    ] as const) {
      const plan = await partOf(3, caps).part.plan(how)
      expect(plan).toHaveProperty('checks')
      expect(plan).not.toHaveProperty('orElse')
    }
  })

  test('every slot taken: a parking try parks on slot 0 with the others as other ways; any other try is blocked, sending nothing', async () => {
    const { part, inner } = partOf(2)
    await take(inner, 'a', 0, 1)
    await part.look()
    expect(await part.plan({ waitChange: 100, keepParked: true })).toMatchObject({ checks: [{ key: slot(0) }], orElse: [{ checks: [{ key: slot(1) }] }] })
    const blocked = await part.plan({})
    expect(blocked).not.toHaveProperty('checks')
    expect(blocked).toMatchObject({ blockers: [{ owner: 'a' }, { owner: 'a' }] })
  })

  test('over a dead owner: its slot, checked at the revision seen, taken with a new life; another owner\'s entries are passed over', async () => {
    const { part } = partOf(3)
    const sight = { blockers: [{ ...entry(0, 'alive', 4), key: 's' }, entry(1, 'alive', 5), entry(2, 'dead', 6)], watches: [] }
    const plan = await part.plan({ over: { sight, owner: 'dead' } })
    expect(plan).toEqual({ checks: [{ key: slot(2), revision: 6 }], ops: [{ type: 'set', key: slot(2), value: { limit: 3 }, ttl: 10_000, owner: 'me', fresh: true }] })
    // The dead owner's entry that is not a slot (its line place, a lock of the same name) is not what it takes over.
    const notSlot = await partOf(3).part.plan({ over: { sight: { blockers: [{ ...entry(0, 'dead', 4), key: 'lock' }], watches: [] }, owner: 'dead' } })
    expect(notSlot).toMatchObject({ checks: [{ key: slot(0), revision: null }] })
  })
})

describe('after a failed try', () => {
  test('a first guess that failed reads every slot once, then plans the lowest free one', async () => {
    const { part, inner, seen } = partOf(3)
    const [e0] = await take(inner, 'a', 0)
    await part.plan({})
    const sight = await part.learn(new Map([[slot(0), e0]]), {})
    expect(sight).toBeUndefined()
    expect(seen.lists).toBe(1)
    expect(await part.plan({})).toMatchObject({ checks: [{ key: slot(1) }] })
  })

  test('once it has read, a failure teaches it from the failed entry alone: no read (a taken slot is seen, a gone one dropped)', async () => {
    const { part, inner, seen } = partOf(2)
    const [e0] = await take(inner, 'a', 0)
    await part.look()
    expect(seen.lists).toBe(1)
    await part.plan({})
    const [e1] = await take(inner, 'b', 1)
    // Its plan took slot 1; the failure shows b there: now both are known taken.
    expect(await part.learn(new Map([[slot(1), e1]]), {})).toMatchObject({ blockers: [{ key: e0!.key }, { key: e1!.key }] })
    expect(seen.lists).toBe(1)
    // A failure at a slot with no entry (freed meanwhile): that slot is free again.
    const fresh = partOf(2)
    await take(fresh.inner, 'a', 0)
    await fresh.part.look()
    await fresh.part.plan({})
    expect(await fresh.part.learn(new Map([[slot(1), undefined]]), {})).toBeUndefined()
    expect(fresh.seen.lists).toBe(1)
  })

  test('a parked take answered with its own slot only reads every slot (another may have freed); without waitChange it does not', async () => {
    const { part, inner, seen } = partOf(2)
    const [e0, e1] = await take(inner, 'a', 0, 1)
    await part.look()
    await part.plan({ waitChange: 100, keepParked: true })
    await part.learn(new Map([[slot(0), e0]]), { waitChange: 100, keepParked: true })
    expect(seen.lists).toBe(2)
    // The same failure on a store that does not park other ways: learnt from the entry alone.
    const plain = partOf(2, { commitOnChange: true })
    await take(plain.inner, 'a', 0, 1)
    await plain.part.look()
    await plain.part.plan({})
    await plain.part.learn(new Map([[slot(0), e0]]), { waitChange: 100 })
    expect(plain.seen.lists).toBe(1)
    void e1
  })

  test('a failure at none of its slots (its place in line, another part): what it knew blocks it, no read', async () => {
    const { part, inner, seen } = partOf(1)
    const [e0] = await take(inner, 'a', 0)
    await part.look()
    await part.plan({ waitChange: 100, keepParked: true })
    expect(await part.learn(new Map([['line-place', undefined]]), { waitChange: 100, keepParked: true })).toMatchObject({ blockers: [{ key: e0!.key }] })
    expect(seen.lists).toBe(1)
  })
})

describe('a won take', () => {
  test('is the slot written, whichever way went through, other written keys aside', async () => {
    const { part } = partOf(3)
    await part.plan({ waitChange: 100, keepParked: true })
    const written = new Map<string, Entry>([
      [slot(2), entry(2, 'me', 9)],
      ['\u0001q\u0001s\u0001place', { ...entry(0, 'me', 9), key: '\u0001q\u0001s\u0001place' }],
    ])
    const permit = part.won(written, 0) as unknown as Lock
    expect(permit.token).toBe(9)
    await permit.release().catch(() => {})
  })
})

describe('what blocks it, and where that shows', () => {
  test('a store that parks other ways: each slot watched at its own key; any other: the slots\' prefix, once', async () => {
    const a = partOf(2)
    await take(a.inner, 'x', 0, 1)
    const sight = await a.part.look()
    expect(sight!.blockers).toHaveLength(2)
    expect(sight!.watches).toEqual([
      { key: slot(0), prefix: false, from: expect.any(Number) },
      { key: slot(1), prefix: false, from: expect.any(Number) },
    ])
    const b = partOf(2, { commitOnChange: true })
    await take(b.inner, 'x', 0, 1)
    expect((await b.part.look())!.watches).toEqual([{ key: slotPrefix('s'), prefix: true, from: expect.any(Number) }])
  })

  test('a free slot known: nothing blocks it', async () => {
    const { part, inner } = partOf(2)
    await take(inner, 'x', 0)
    expect(await part.look()).toBeUndefined()
  })

  test('a permit taken with a larger limit (slot 5 of a semaphore used with limit 2 here) does not count against this limit', async () => {
    const { part, inner } = partOf(2)
    await inner.commit([], [{ type: 'set', key: slot(5), value: { limit: 9 }, ttl: 10_000, owner: 'big' }])
    await take(inner, 'x', 0)
    expect(await part.look()).toBeUndefined()
    expect(await part.plan({})).toMatchObject({ checks: [{ key: slot(1) }] })
    // Nor is the slot just past the limit among what blocks it when the slots below are full.
    await inner.commit([], [{ type: 'set', key: slot(2), value: { limit: 3 }, ttl: 10_000, owner: 'big' }])
    await take(inner, 'x', 1)
    expect((await part.look())!.blockers.map((b) => b.key)).toEqual([slot(0), slot(1)])
  })
})

describe('events', () => {
  test('a put at a slot takes it, a delete frees it; other keys change nothing; it watches on from the newest revision seen', async () => {
    const { part } = partOf(1, { commitOnChange: true })
    await part.look()
    const put = { type: 'put' as const, key: slot(0), value: { limit: 1 }, revision: 20, created: 20, owner: 'x', ttl: 10_000 }
    expect(part.afterEvent(put)).toMatchObject({ blockers: [{ owner: 'x' }], watches: [{ from: 20 }] })
    // An older event (a watch catching up) does not move the watch back.
    expect(part.afterEvent({ ...put, key: slot(3), revision: 12 })).toMatchObject({ watches: [{ from: 20 }] })
    expect(part.afterEvent({ type: 'put', key: 'elsewhere', value: 1, revision: 30, created: 30 })).toMatchObject({ blockers: [{ owner: 'x' }], watches: [{ from: 20 }] })
    expect(part.afterEvent({ type: 'delete', key: slot(0), revision: 31 })).toBeUndefined()
  })

  test('a read moves the watch up to the newest entry it saw, never down', async () => {
    const { part, inner } = partOf(2, { commitOnChange: true })
    const [e0, e1] = await take(inner, 'x', 0, 1)
    part.afterEvent({ type: 'put', key: 'elsewhere', value: 1, revision: 1_000, created: 1_000 })
    expect((await part.look())!.watches).toEqual([{ key: slotPrefix('s'), prefix: true, from: Math.max(e0!.revision, e1!.revision) }])
    part.afterEvent({ type: 'put', key: slot(1), value: { limit: 2 }, revision: 1_000, created: 1_000, owner: 'y' })
    expect(part.blocked()).toMatchObject({ watches: [{ from: 1_000 }] })
  })
})
