/**
 * The acquire machine (src/core/acquire/machine.ts), one test per
 * transition: each puts the machine in a state over the real memory store on
 * a ManualClock, stages what the transition needs (a holder, a waiter ahead,
 * a release, time passing, a dead owner) and takes one `step`.
 */
import { afterEach, describe, expect, test } from 'vitest'
import { Client, Lock } from 'zaris'
import { AcquireMachine, HANDOVER_GRACE, PATROL, type State } from '../../src/core/acquire/machine'
import { claimOf, type Claim, type HoldSpec } from '../../src/core/acquire/claim'
import type { Context } from '../../src/core/context'
import { ExclusivePart } from '../../src/core/acquire/exclusive-part'
import type { HoldInit } from '../../src/core/hold/hold'
import { sightOf, type Sight } from '../../src/core/acquire/wait'
import { contextOf, freshStore, staged } from './machine-kit'

const KEY = 'lock:m'
const QUEUE = `\u0001q${KEY}\u0001`
const cleanups: Array<() => unknown> = []

/** The claim of a lock on `key` alone, as `locks.acquire` makes it. */
function soleClaim(ctx: Context, key: string, spec: HoldSpec<null, Lock>): Claim<Lock> {
  return claimOf(ctx, [new ExclusivePart(ctx, key, spec, { lock: true })], { key, value: 'exclusive' }, ([h]) => h!)
}
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

function setup(options: { wait?: number; steal?: boolean; key?: string; signal?: AbortSignal } = {}) {
  const key = options.key ?? KEY
  const { clock, raw } = freshStore()
  const store = staged(raw())
  const ctx = contextOf(store.adapter, clock, 'waiter')
  const holder = new Client(raw(), { id: 'holder', clock })
  const won: Lock[] = []
  const claim = soleClaim(ctx, key, { value: null, ttl: 10_000, autoRenew: false, make: (init: HoldInit<null>) => { const l = new Lock(ctx, init); won.push(l); return l } })
  const m = new AcquireMachine(ctx, claim, { wait: options.wait ?? 5_000, steal: options.steal, signal: options.signal })
  cleanups.push(async () => {
    m.stop()
    await Promise.all(won.map((l) => l.release().catch(() => {})))
    await holder.close()
  })
  const hold = async () => (await holder.locks.acquire(key, { ttl: 10_000, autoRenew: false }))!
  const sightNow = async () => sightOf((await store.adapter.get(key))!)
  /** Writes a waiter's place in line, as another client's join would. */
  const placeAhead = async (owner = 'ahead') => {
    const k = `${QUEUE}${owner}.1`
    const r = await store.adapter.commit([{ key: k, revision: null }], [{ type: 'set', key: k, value: null, ttl: 10_000, owner }])
    if (!r.ok) throw new Error('place taken')
    return r.entries[0]!
  }
  /** Steps from `join` with the key free or held: the machine is then first in line. */
  const beFirst = async () => {
    const s = await m.step({ name: 'join', sight: undefined })
    expect(m.first).toBe(true)
    return s
  }
  return { clock, store, ctx, holder, m, hold, sightNow, placeAhead, beFirst, raw, key }
}

const name = <H>(s: State<H>) => s.name

describe('open', () => {
  test('open → won: the key is free', async () => {
    const { m } = setup()
    const s = await m.step({ name: 'open' })
    expect(name(s)).toBe('won')
  })

  test('open → gave-up: the key is held and there is no time to wait', async () => {
    const { m, hold } = setup({ wait: 0 })
    await hold()
    expect(name(await m.step({ name: 'open' }))).toBe('gave-up')
  })

  test('open → join: the key is held; the sight is its holder', async () => {
    const { m, hold } = setup()
    const lock = await hold()
    const s = await m.step({ name: 'open' })
    expect(s).toMatchObject({ name: 'join', sight: { blockers: [{ owner: 'holder', created: lock.token }] } })
  })

  test('open → watch: the key is held and too long to have a line', async () => {
    const { m, hold } = setup({ key: `k${'x'.repeat(1019)}` })
    await hold()
    expect(m.line).toBeUndefined()
    expect(name(await m.step({ name: 'open' }))).toBe('watch')
  })

  test('open → watch: a claim with no line (a multi-key lock\'s) watches at once, first from the start', async () => {
    const { ctx, hold, key } = setup()
    await hold()
    const spec = { value: null, ttl: 10_000, autoRenew: false, make: (init: HoldInit<null>) => new Lock(ctx, init) }
    const parts = [key, 'lock:other'].map((k) => new ExclusivePart(ctx, k, spec, { lock: true }))
    const m = new AcquireMachine(ctx, claimOf(ctx, parts, undefined, (holds) => holds), { wait: 5_000 })
    cleanups.push(() => m.stop())
    expect(m.line).toBeUndefined()
    expect(m.first).toBe(true)
    expect(await m.step({ name: 'open' })).toMatchObject({ name: 'watch', sight: { blockers: [{ owner: 'holder' }] } })
  })

  test('open → steal → won: steal takes the key over and the old token dies', async () => {
    const { m, hold, store, key } = setup({ steal: true })
    const old = await hold()
    const s = await m.step({ name: 'open' })
    expect(name(s)).toBe('steal')
    const w = await m.step(s)
    expect(w.name).toBe('won')
    const entry = await store.adapter.get(key)
    expect(entry).toMatchObject({ owner: 'waiter' })
    expect(entry!.created).toBeGreaterThan(old.token)
  })

  test('steal → open: the holder renewed between the look and the steal', async () => {
    const { m, hold, sightNow } = setup({ steal: true })
    const lock = await hold()
    const seen = await sightNow()
    expect(await lock.renew()).toBe(true)
    expect(name(await m.step({ name: 'steal', sight: seen }))).toBe('open')
  })

  test('open → open: what beat the try vanished before it could be read (scripted claim: a test double)', async () => {
    const { ctx } = setup()
    const results = [{ sight: undefined, lostPlace: false }, { hold: 'the hold' }]
    const scripted: Claim<string> = {
      lineKey: KEY,
      attempt: async () => results.shift() as never,
      look: async () => undefined,
      afterEvent: () => undefined,
      leave() {},
    }
    const m = new AcquireMachine(ctx, scripted, { wait: 1_000 })
    expect(name(await m.step({ name: 'open' }))).toBe('open')
    expect(await m.step({ name: 'open' })).toEqual({ name: 'won', hold: 'the hold' })
  })
})

describe('join', () => {
  test('join → behind: a waiter stands ahead in line', async () => {
    const { m, hold, sightNow, placeAhead } = setup()
    await hold()
    const ahead = await placeAhead()
    const s = await m.step({ name: 'join', sight: await sightNow() })
    expect(s).toMatchObject({ name: 'behind', ahead: { key: ahead.key, owner: 'ahead' } })
    expect(m.first).toBe(false)
  })

  test('join → watch: first in line, and the key is held', async () => {
    const { m, hold, sightNow, store } = setup()
    await hold()
    const s = await m.step({ name: 'join', sight: await sightNow() })
    expect(name(s)).toBe('watch')
    expect(m.first).toBe(true)
    const line = (await store.adapter.list(QUEUE)).entries
    expect(line.map((e) => e.owner)).toEqual(['waiter'])
    expect(m.line?.entry?.key).toBe(line[0]!.key)
  })

  test('join → try: first in line, and the key is free', async () => {
    const { m } = setup()
    expect(name(await m.step({ name: 'join', sight: undefined }))).toBe('try')
    expect(m.first).toBe(true)
  })

  test('join → watch with a claim that has no becameFirst (it is optional: a scripted claim, a test double)', async () => {
    const { ctx, hold, sightNow } = setup()
    await hold()
    const sight = await sightNow()
    const scripted: Claim<string> = {
      lineKey: 'lock:scripted',
      attempt: async () => ({ sight, lostPlace: false }),
      look: async () => sight,
      afterEvent: () => sight,
      leave() {},
    }
    const m = new AcquireMachine(ctx, scripted, { wait: 1_000 })
    cleanups.push(() => m.stop())
    expect(await m.step({ name: 'join', sight })).toEqual({ name: 'watch', sight })
    expect(m.first).toBe(true)
  })

  test('join → woke: the holder left while the place was being written (the early watch)', async () => {
    const { m, hold, sightNow, store } = setup()
    const lock = await hold()
    const joining = store.gate((_c, ops) => ops[0]?.key.startsWith(QUEUE) === true)
    const stepping = m.step({ name: 'join', sight: await sightNow() })
    await joining.arrived
    await lock.release()
    const s = await stepping
    expect(s).toMatchObject({ name: 'woke', wake: { kind: 'event', event: { type: 'delete', key: KEY } } })
    joining.open()
  })
})

describe('behind and patrol', () => {
  test('behind → join: the waiter ahead left the line', async () => {
    const { m, placeAhead, store } = setup()
    const ahead = await placeAhead()
    const stepping = m.step({ name: 'behind', ahead })
    await store.adapter.commit([], [{ type: 'delete', key: ahead.key }])
    expect(await stepping).toEqual({ name: 'join', sight: undefined })
  })

  test('behind → join: the client of the waiter ahead is gone, and its place is evicted', async () => {
    const { m, placeAhead, store } = setup()
    const ahead = await placeAhead('ghost')
    const stepping = m.step({ name: 'behind', ahead })
    store.kill('ghost')
    expect(await stepping).toEqual({ name: 'join', sight: undefined })
    expect(await store.adapter.get(ahead.key)).toBeUndefined()
  })

  test('behind → patrol: PATROL ms pass with the waiter ahead still in line', async () => {
    const { m, placeAhead, clock } = setup()
    const ahead = await placeAhead()
    const stepping = m.step({ name: 'behind', ahead })
    await clock.advance(PATROL)
    expect(await stepping).toEqual({ name: 'patrol' })
  })

  test('behind → patrol → gave-up: the wait runs out before PATROL, with the waiter ahead still in line', async () => {
    const { m, placeAhead, clock } = setup({ wait: 300 })
    const ahead = await placeAhead()
    const stepping = m.step({ name: 'behind', ahead })
    await clock.advance(300)
    const s = await stepping
    expect(s).toEqual({ name: 'patrol' })
    expect(await m.step(s)).toEqual({ name: 'gave-up' })
  })

  test('patrol → try: the key is free, after HANDOVER_GRACE ms (a handover may be in flight: trying at once would jump the line)', async () => {
    const { m, placeAhead, clock } = setup()
    await placeAhead()
    let settled = false
    const stepping = m.step({ name: 'patrol' }).finally(() => (settled = true))
    await clock.advance(HANDOVER_GRACE - 1)
    expect(settled).toBe(false)
    await clock.advance(1)
    expect(await stepping).toEqual({ name: 'try' })
  })

  test('patrol → try → join: the waiter ahead took the key during HANDOVER_GRACE; the try fails and the patrol goes back in line', async () => {
    const { m, placeAhead, store, clock } = setup()
    const ahead = await placeAhead()
    const stepping = m.step({ name: 'patrol' })
    await clock.advance(HANDOVER_GRACE / 2)
    // The first in line takes the key in the commit that removes its place, as a try does.
    expect((await store.adapter.commit([{ key: KEY, revision: null }], [{ type: 'set', key: KEY, value: null, ttl: 10_000, owner: 'ahead' }, { type: 'delete', key: ahead.key }])).ok).toBe(true)
    await clock.advance(HANDOVER_GRACE / 2)
    const s = await stepping
    expect(s).toEqual({ name: 'try' })
    expect(await m.step(s)).toMatchObject({ name: 'join', sight: { blockers: [{ owner: 'ahead' }] } })
  })

  test('patrol → gave-up: the wait runs out during HANDOVER_GRACE (no try past the deadline)', async () => {
    const { m, placeAhead, clock } = setup({ wait: 200 })
    await placeAhead()
    const stepping = m.step({ name: 'patrol' })
    await clock.advance(200)
    const s = await stepping
    expect(s).toEqual({ name: 'try' })
    expect(await m.step(s)).toEqual({ name: 'gave-up' })
  })

  test('patrol → join: the key is held', async () => {
    const { m, hold } = setup()
    await hold()
    expect(await m.step({ name: 'patrol' })).toMatchObject({ name: 'join', sight: { blockers: [{ owner: 'holder' }] } })
  })
})

describe('try', () => {
  test('try → won: one commit takes the key and leaves the line', async () => {
    const { m, beFirst, store } = setup()
    await beFirst()
    expect((await store.adapter.list(QUEUE)).entries).toHaveLength(1)
    expect(name(await m.step({ name: 'try' }))).toBe('won')
    expect((await store.adapter.list(QUEUE)).entries).toHaveLength(0)
  })

  test('try → won from the line: the winning commit deleted the place, so ending the wait sends nothing more', async () => {
    const { m, beFirst, store } = setup()
    await beFirst()
    let commits = 0
    const inner = store.adapter.commit
    store.adapter.commit = (...args) => (commits++, inner(...args))
    expect(name(await m.step({ name: 'try' }))).toBe('won')
    m.stop()
    await new Promise((r) => setTimeout(r, 0))
    expect(commits).toBe(1)
  })

  test('try → join: the place was lost (expired, evicted): back in line', async () => {
    const { m, beFirst, store } = setup()
    await beFirst()
    const [place] = (await store.adapter.list(QUEUE)).entries
    await store.adapter.commit([], [{ type: 'delete', key: place!.key }])
    expect(await m.step({ name: 'try' })).toEqual({ name: 'join', sight: undefined })
    expect(m.first).toBe(false)
  })

  test('try → watch: first in line, but someone took the key first', async () => {
    const { m, beFirst, hold } = setup()
    await beFirst()
    const lock = await hold()
    expect(await m.step({ name: 'try' })).toMatchObject({ name: 'watch', sight: { blockers: [{ created: lock.token }] } })
  })
})

describe('watch and woke', () => {
  async function watching(options: { wait?: number } = {}) {
    const t = setup(options)
    const lock = await t.hold()
    const first = await t.beFirst()
    expect(name(first)).toBe('watch')
    return { ...t, lock, sight: (first as { sight: Sight }).sight }
  }

  test('watch → woke (event): the holder released', async () => {
    const { m, lock, sight } = await watching()
    const stepping = m.step({ name: 'watch', sight })
    await lock.release()
    expect(await stepping).toMatchObject({ name: 'woke', wake: { kind: 'event', event: { type: 'delete' } } })
  })

  test('watch → woke (timeout): the wait ran out', async () => {
    const { m, sight, clock } = await watching({ wait: 2_000 })
    const stepping = m.step({ name: 'watch', sight })
    await clock.advance(2_000)
    expect(await stepping).toMatchObject({ name: 'woke', wake: { kind: 'timeout' } })
  })

  test('watch → woke (changed): the watch failed, so look again', async () => {
    const t = setup()
    await t.hold()
    await t.beFirst()
    t.store.refuseWatches()
    const stepping = t.m.step({ name: 'watch', sight: await t.sightNow() })
    await t.clock.advance(50)
    expect(await stepping).toMatchObject({ name: 'woke', wake: { kind: 'changed' } })
  })

  test('watch → woke (owner-gone): the holder\'s client is gone', async () => {
    const { m, sight, store } = await watching()
    const stepping = m.step({ name: 'watch', sight })
    store.kill('holder')
    expect(await stepping).toMatchObject({ name: 'woke', wake: { kind: 'owner-gone', owner: 'holder' } })
  })

  test('woke → takeover: a blocker\'s client is gone', async () => {
    const { m, sight } = await watching()
    expect(await m.step({ name: 'woke', wake: { kind: 'owner-gone', owner: 'holder' }, sight })).toEqual({ name: 'takeover', sight, owner: 'holder' })
  })

  test('woke → watch: a put is a renewal (or a new holder): wait on it', async () => {
    const { m, sight, lock, store } = await watching()
    await lock.renew()
    const renewed = (await store.adapter.get(KEY))!
    const event = { type: 'put' as const, key: KEY, revision: renewed.revision, created: renewed.created, owner: 'holder', ttl: 10_000, value: null }
    const s = await m.step({ name: 'woke', wake: { kind: 'event', event }, sight })
    expect(s).toMatchObject({ name: 'watch', sight: { blockers: [{ revision: renewed.revision }] } })
  })

  test('woke → try: a delete or expiry frees the key', async () => {
    const { m, sight } = await watching()
    const event = { type: 'expire' as const, key: KEY, revision: sight.blockers[0]!.revision + 1 }
    expect(await m.step({ name: 'woke', wake: { kind: 'event', event }, sight })).toEqual({ name: 'try' })
  })

  test('woke → join: an event frees the key, but someone stands ahead', async () => {
    const { m, hold, sightNow } = setup()
    await hold()
    const sight = await sightNow()
    const event = { type: 'delete' as const, key: KEY, revision: sight.blockers[0]!.revision + 1 }
    expect(m.first).toBe(false)
    expect(await m.step({ name: 'woke', wake: { kind: 'event', event }, sight })).toEqual({ name: 'join', sight: undefined })
  })

  test('woke → look: a change the wake does not describe', async () => {
    const { m, sight } = await watching()
    expect(await m.step({ name: 'woke', wake: { kind: 'changed' }, sight })).toEqual({ name: 'look' })
  })

  test('woke (timeout) → watch while time is left: the blocker is still there', async () => {
    const { m, sight } = await watching({ wait: 1_000 })
    expect(await m.step({ name: 'woke', wake: { kind: 'timeout' }, sight })).toEqual({ name: 'watch', sight })
  })

  test('woke (timeout) → gave-up at the next step: the deadline passed', async () => {
    const { m, sight, clock } = await watching({ wait: 1_000 })
    await clock.advance(1_000)
    const s = await m.step({ name: 'woke', wake: { kind: 'timeout' }, sight })
    expect(await m.step(s)).toEqual({ name: 'gave-up' })
  })
})

describe('look and takeover', () => {
  test('look → try: the key is free (first in line)', async () => {
    const { m, beFirst } = setup()
    await beFirst()
    expect(await m.step({ name: 'look' })).toEqual({ name: 'try' })
  })

  test('look → watch: the key is held (first in line)', async () => {
    const { m, beFirst, hold } = setup()
    await beFirst()
    await hold()
    expect(await m.step({ name: 'look' })).toMatchObject({ name: 'watch', sight: { blockers: [{ owner: 'holder' }] } })
  })

  test('takeover → won: the dead holder\'s entry, unchanged, is taken over with a new token', async () => {
    const { m, hold, beFirst, sightNow, store } = setup()
    const lock = await hold()
    await beFirst()
    const s = await m.step({ name: 'takeover', sight: await sightNow(), owner: 'holder' })
    expect(s.name).toBe('won')
    expect((s as { hold: Lock }).hold.token).toBeGreaterThan(lock.token)
    expect((await store.adapter.list(QUEUE)).entries).toHaveLength(0)
  })

  test('takeover → won with no line (a multi-key lock\'s claim): nothing to leave', async () => {
    const { ctx, hold, sightNow, key } = setup()
    const lock = await hold()
    const spec = { value: null, ttl: 10_000, autoRenew: false, make: (init: HoldInit<null>) => new Lock(ctx, init) }
    const parts = [key, 'lock:other'].map((k) => new ExclusivePart(ctx, k, spec, { lock: true }))
    const m = new AcquireMachine(ctx, claimOf(ctx, parts, undefined, (holds) => holds), { wait: 5_000 })
    cleanups.push(() => m.stop())
    const s = await m.step({ name: 'takeover', sight: await sightNow(), owner: 'holder' })
    expect(s.name).toBe('won')
    expect((s as { hold: Lock[] }).hold.map((l) => l.token)).toEqual([expect.any(Number), expect.any(Number)])
    expect((s as { hold: Lock[] }).hold[0]!.token).toBeGreaterThan(lock.token)
  })

  test('takeover → watch: the entry changed since it was seen (renewed): no takeover', async () => {
    const { m, hold, beFirst, sightNow, store } = setup()
    const lock = await hold()
    await beFirst()
    const seen = await sightNow()
    await lock.renew()
    const s = await m.step({ name: 'takeover', sight: seen, owner: 'holder' })
    expect(s).toMatchObject({ name: 'watch', sight: { blockers: [{ owner: 'holder', created: lock.token }] } })
    expect((await store.adapter.get(KEY))?.owner).toBe('holder')
  })

  test('takeover → won: the dead holder\'s entry was ended meanwhile (a reaper got there first): one failed try over it, then a plain one', async () => {
    const { m, hold, beFirst, sightNow, store } = setup()
    const lock = await hold()
    await beFirst()
    const seen = await sightNow()
    await store.adapter.commit([], [{ type: 'delete', key: KEY }])
    const commit = store.adapter.commit
    const sent: Array<number | null | undefined> = []
    store.adapter.commit = (checks, ops, options) => {
      const check = checks.find((c) => c.key === KEY)
      sent.push(check && 'revision' in check ? check.revision : undefined)
      return commit(checks, ops, options)
    }
    const s = await m.step({ name: 'takeover', sight: seen, owner: 'holder' })
    expect(s.name).toBe('won')
    expect((s as { hold: Lock }).hold.token).toBeGreaterThan(lock.token)
    // The old revision is checked once, not once per round (each a commit that cannot succeed).
    expect(sent).toEqual([lock.revision, null])
  })
})

describe('every step checks the signal, the client and the deadline', () => {
  const states: Array<State<Lock>> = [{ name: 'join', sight: undefined }, { name: 'patrol' }, { name: 'try' }, { name: 'look' }]

  test.each(states)('$name → gave-up once the wait\'s deadline passed', async (state) => {
    const { m, clock } = setup({ wait: 100 })
    await clock.advance(100)
    expect(await m.step(state)).toEqual({ name: 'gave-up' })
  })

  test('an aborted signal rejects with its reason; a closed client with CLOSED', async () => {
    const controller = new AbortController()
    const { m } = setup({ signal: controller.signal })
    controller.abort(new Error('user gave up'))
    await expect(m.step({ name: 'open' })).rejects.toThrow('user gave up')
    const t = setup()
    t.ctx.close()
    await expect(t.m.step({ name: 'try' })).rejects.toMatchObject({ code: 'CLOSED' })
  })

  test('won and gave-up are ends: a step leaves them as they are', async () => {
    const { m } = setup()
    const end: State<Lock> = { name: 'gave-up' }
    expect(await m.step(end)).toBe(end)
    const won = await m.step({ name: 'open' })
    expect(won.name).toBe('won')
    expect(await m.step(won)).toBe(won)
  })
})


describe('what a wait leaves open', () => {
  /** Lets the store's watch calls and their cleanups settle. */
  const settle = () => new Promise((r) => setTimeout(r, 0))

  test('join → behind drops the early watch on the holder: behind, it watches only the waiter ahead', async () => {
    const { m, hold, sightNow, placeAhead, store } = setup()
    await hold()
    const ahead = await placeAhead()
    const s = await m.step({ name: 'join', sight: await sightNow() })
    expect(name(s)).toBe('behind')
    await settle()
    expect(store.openWatches()).toBe(0)
    const stepping = m.step({ name: 'behind', ahead })
    await settle()
    expect(store.openWatches()).toBe(1)
    await store.adapter.commit([], [{ type: 'delete', key: ahead.key }])
    expect(name(await stepping)).toBe('join')
    await settle()
    expect(store.openWatches()).toBe(0)
  })

  test('join → watch: the watch goes on with the early watch begun while joining, not a second one', async () => {
    const { m, lock, sight, store } = await (async () => {
      const t = setup()
      const lock = await t.hold()
      const s = await t.m.step({ name: 'join', sight: await t.sightNow() })
      expect(name(s)).toBe('watch')
      return { ...t, lock, sight: (s as { sight: Sight }).sight }
    })()
    await settle()
    expect(store.openWatches()).toBe(1)
    const stepping = m.step({ name: 'watch', sight })
    await settle()
    expect(store.openWatches()).toBe(1)
    await lock.release()
    expect(name(await stepping)).toBe('woke')
    await settle()
    expect(store.openWatches()).toBe(0)
  })

  test('run() leaves no watch open, whether it wins or gives up', async () => {
    const { m, hold, store } = setup({ wait: 3_000 })
    const lock = await hold()
    const winning = m.run()
    await settle()
    expect(store.openWatches()).toBeGreaterThan(0)
    await lock.release()
    expect(await winning).not.toBeNull()
    await settle()
    expect(store.openWatches()).toBe(0)

    const t = setup({ wait: 2_000 })
    await t.hold()
    const giving = t.m.run()
    await settle()
    await t.clock.advance(2_000)
    expect(await giving).toBeNull()
    await settle()
    expect(t.store.openWatches()).toBe(0)
  })
})

describe('a whole wait: the patrol and a handover in flight', () => {
  const settles = <T>(p: Promise<T>) => {
    const s = { done: false, value: undefined as T | undefined }
    void p.then((v) => Object.assign(s, { done: true, value: v }), () => (s.done = true))
    return s
  }
  const flush = () => new Promise((r) => setTimeout(r, 20))

  test('the second in line patrols while the first one\'s take is on its way: it waits, and the first gets the lock', async () => {
    const { clock, raw } = freshStore()
    const slow = staged(raw())
    // c as b, on a store without parked takes (staged declares none): the patrol is the path of such a store.
    const [a, b, c] = [new Client(raw(), { id: 'a', clock }), new Client(slow.adapter, { id: 'b', clock }), new Client(staged(raw()).adapter, { id: 'c', clock })]
    cleanups.push(() => Promise.all([a, b, c].map((x) => x.close())))
    const inLine = async (n: number) => {
      while ((await a.adapter.list(QUEUE)).entries.length !== n) await flush()
    }
    const held = (await a.locks.acquire(KEY, { ttl: 10_000, autoRenew: false }))!
    const options = { ttl: 10_000, wait: 60_000, autoRenew: false }
    const bWaits = settles(b.locks.acquire(KEY, options))
    await inLine(1)
    const cWaits = settles(c.locks.acquire(KEY, options))
    await inLine(2)
    // b's take reaches the store late (a loaded tab, a slow link): the gap a patrol could land in.
    const take = slow.gate((_checks, ops) => ops.some((o) => o.type === 'set' && o.key === KEY))
    await held.release()
    await take.arrived
    await clock.advance(PATROL) // c's patrol: it finds the lock free, with b ahead
    await flush()
    await clock.advance(HANDOVER_GRACE - 10)
    await flush()
    expect(cWaits.done, 'the second in line took the lock from under the first one\'s take').toBe(false)
    take.open()
    while (!bWaits.done) await flush()
    expect(bWaits.value?.owner).toBe('b')
    await flush()
    expect(cWaits.done).toBe(false)
    await bWaits.value!.release()
    await clock.advance(10) // the rest of c's pause: its try then finds the lock free
    while (!cWaits.done) await flush()
    expect(cWaits.value?.owner).toBe('c')
    await cWaits.value!.release()
  })
})
