/**
 * The gated acquire (src/core/acquire/gated.ts) and the hand-on release
 * (src/core/hold/hand-on.ts) at their edges, over the memory store with a
 * fake lock manager of this process in place of the browser's Web Locks
 * (./gated-kit); a slow grant, a failing store or watch, and a commit held
 * back are fakes too, named so where a test stages them. The cases come from
 * what Stryker's mutants of those files showed unchecked
 * (test/mutation/gated.stryker.config.mjs).
 */
import { getEventListeners } from 'node:events'
import { afterEach, describe, expect, test } from 'vitest'
import type { Adapter, Gate, Lock } from 'zaris'
import { IN_LINE } from '../../src/core/acquire/checks'
import { EXPIRED_GRACE, FREE_GRACE, LOOK_AFTER } from '../../src/core/acquire/gated'
import { HAND_ON_WAIT } from '../../src/core/hold/hand-on'
import { closeAll, code, deletedOnFirstRead, gateWith, heldBack, settled, setup, slowTake, tick } from './gated-kit'
import { countedWatches } from './machine-kit'

afterEach(closeAll)

/** An adapter whose commits that match run `before` first, once each time it is set (a fake race, staged by the test). */
function racing(match: (ops: Parameters<Adapter['commit']>[1]) => boolean) {
  let before: (() => Promise<unknown>) | undefined
  const wrap = (inner: Adapter): Adapter => ({
    ...inner,
    commit: async (checks, ops, options) => {
      const run = match(ops) ? before : undefined
      if (run) before = undefined
      if (run) await run()
      return inner.commit(checks, ops, options)
    },
  })
  return { wrap, set: (fn: () => Promise<unknown>) => (before = fn) }
}

const deletesK = (ops: Parameters<Adapter['commit']>[1]) => ops.some((o) => o.key === 'k' && o.type === 'delete')
const setsK = (ops: Parameters<Adapter['commit']>[1]) => ops.some((o) => o.key === 'k' && o.type === 'set')

/** The gate of `g`, with its grant answered only once `until` resolves (a slow lock manager: a fake delay). */
const slowGate = (g: Gate, until: Promise<void>): Gate =>
  gateWith(g, {
    granted: g.granted.then(async (ok) => {
      await until
      return ok
    }),
  })

describe('a slow lock manager (its grant comes after LOOK_AFTER: a fake delay)', () => {
  test('a steal still takes the key, and a plain try of a free key holds it and its gate', async () => {
    const { client, clock, manager } = setup()
    let answer!: () => void
    const later = new Promise<void>((r) => (answer = r))
    const slow = (a: Adapter): Adapter => ({ ...a, gate: (key, o) => slowGate(a.gate!(key, o), later) })
    const [a, b] = [client('a', slow), client('b', slow)]
    const trying = a.locks.acquire('k', { autoRenew: false })
    await tick()
    await clock.advance(LOOK_AFTER)
    answer()
    const plain = (await trying)!
    expect(plain).not.toBeNull()
    expect(manager.taken('k')).toBe(true) // taken through its gate, not past it
    const stealing = b.locks.acquire('k', { steal: true, autoRenew: false })
    await tick()
    await clock.advance(LOOK_AFTER)
    const stolen = (await stealing)!
    expect(stolen).not.toBeNull()
    expect(stolen.token).toBeGreaterThan(plain.token)
    expect(code(plain)).toBe('STOLEN')
    await stolen.release()
  })
})

describe('a frozen grantee holds the gate of a free key', () => {
  /** The grantee: granted the gate, and never takes the key (a frozen tab's grant). */
  async function frozen(adapter: Adapter) {
    const grantee = adapter.gate!('k')
    expect(await grantee.granted).toBe(true)
    return grantee
  }

  test('a waiter whose wait runs out before FREE_GRACE gets null: it does not take the key past the gate', async () => {
    const { client, adapter, clock, queued } = setup()
    const grantee = await frozen(adapter)
    const waiting = client('b').locks.acquire('k', { wait: 500, autoRenew: false })
    await queued()
    await clock.advance(500)
    expect(await waiting).toBeNull()
    expect(await adapter.get('k')).toBeUndefined()
    expect(grantee.held).toBe(true)
    expect((await adapter.list('\u0001q')).entries).toEqual([])
    grantee.release()
  })

  test('a wait no longer than LOOK_AFTER gets null as soon as it looks, without taking the key', async () => {
    const { client, adapter, clock } = setup()
    const grantee = await frozen(adapter)
    const waiting = client('b').locks.acquire('k', { wait: LOOK_AFTER, autoRenew: false })
    await tick()
    await clock.advance(LOOK_AFTER)
    expect(await settled(waiting)).toBe(true)
    expect(await waiting).toBeNull()
    expect(await adapter.get('k')).toBeUndefined()
    grantee.release()
  })

  test('a key never written is taken FREE_GRACE after it was seen free (not EXPIRED_GRACE), in one write', async () => {
    const { client, adapter, clock, events, queued } = setup()
    const grantee = await frozen(adapter)
    let lost = false
    grantee.onLost(() => (lost = true))
    const waiting = client('b').locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    await clock.advance(EXPIRED_GRACE + 10)
    expect(await settled(waiting)).toBe(false)
    await clock.advance(FREE_GRACE - EXPIRED_GRACE - 10)
    const next = (await waiting)!
    expect(next.owner).toBe('b')
    expect(lost).toBe(true)
    expect(events.filter((e) => e.key === 'k').map((e) => [e.type, e.owner])).toEqual([['put', 'b']])
    expect((await adapter.list('\u0001q')).entries).toEqual([]) // its take deleted its place
    expect(await next.release()).toBe(true)
    expect(await adapter.get('k')).toBeUndefined()
  })

  test('a waiter whose takeover commit fails (a plain write came first: a fake race) keeps waiting and steals no gate', async () => {
    const { client, adapter, clock, queued } = setup()
    const grantee = await frozen(adapter)
    const race = racing(setsK)
    const waiting = client('b', race.wrap).locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    race.set(() => adapter.commit([], [{ type: 'set', key: 'k', value: 'plain' }]))
    await clock.advance(FREE_GRACE)
    expect(await settled(waiting)).toBe(false)
    expect(grantee.held).toBe(true)
    expect((await adapter.get('k'))?.value).toBe('plain')
    await adapter.commit([], [{ type: 'delete', key: 'k' }])
    grantee.release() // b is granted the gate and takes the key
    const next = (await waiting)!
    expect(next.owner).toBe('b')
    expect((await adapter.list('\u0001q')).entries).toEqual([]) // its take deleted the place it kept
    await next.release()
  })

  test('a key too long to have a line: a waiter still takes it over after FREE_GRACE, and an IN_LINE one is told it queued', async () => {
    const { client, adapter, clock, queued } = setup()
    const key = 'x'.repeat(1_010) // no room for a place in line under it
    const grantee = adapter.gate!(key)
    expect(await grantee.granted).toBe(true)
    let told = 0
    const waiting = client('b').locks.acquire(key, { wait: 60_000, autoRenew: false, [IN_LINE]: { onQueued: () => told++ } } as never) as Promise<Lock | null>
    // Two more waiters, without IN_LINE and with it but no onQueued, give up at their deadline.
    const others = [client('c').locks.acquire(key, { wait: 2 * LOOK_AFTER }), client('d').locks.acquire(key, { wait: 2 * LOOK_AFTER, [IN_LINE]: {} } as never)]
    await queued()
    expect(told).toBe(1)
    await clock.advance(LOOK_AFTER)
    expect(await Promise.all(others)).toEqual([null, null])
    await clock.advance(FREE_GRACE - LOOK_AFTER)
    const next = (await waiting)!
    expect(next.key).toBe(key)
    expect(grantee.held).toBe(false)
    await next.release()
  })

  test('a gate taken from a grantee between its grant and its take: the take stands, and the hold lives without the gate', async () => {
    const { client, adapter, manager, queued } = setup()
    const grantee = await frozen(adapter)
    const take = heldBack() // b's take through its gate waits until the test lets it go
    const waiting = client('b', slowTake(take)).locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    grantee.release()
    await take.arrived
    const thief = adapter.gate!('k', { steal: true })
    expect(await thief.granted).toBe(true)
    thief.release()
    take.go()
    const next = (await waiting)!
    expect(next.held).toBe(true)
    expect(manager.taken('k')).toBe(false)
    expect(await next.release()).toBe(true)
    expect(await adapter.get('k')).toBeUndefined()
  })
})

describe('what the wait sees of the key', () => {
  test('a watch that fails while the wait watches (a fake failure) makes it look again: a key freed meanwhile is taken FREE_GRACE later', async () => {
    const { client, adapter, clock, queued } = setup()
    const grantee = adapter.gate!('k') // granted, and never takes the key
    expect(await grantee.granted).toBe(true)
    await adapter.commit([], [{ type: 'set', key: 'k', value: 'plain' }]) // no TTL: nothing to time
    const failing = (inner: Adapter): Adapter => ({
      ...inner,
      // The delete is not told: the watch fails instead.
      watch: (prefix, sink, from) => inner.watch(prefix, { event: (ev) => (ev.type === 'delete' ? sink.error(new Error('watch lost (a fake failure)')) : sink.event(ev)), error: (err) => sink.error(err) }, from),
    })
    const waiting = client('b', failing).locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    await adapter.commit([], [{ type: 'delete', key: 'k' }])
    await tick()
    await clock.advance(FREE_GRACE)
    const next = (await waiting)!
    expect(next.owner).toBe('b')
    await next.release()
    grantee.release()
  })

  test('a wait longer than a platform timer can hold (30 days) waits: past 2^31-1 ms on the manual clock, and on the system clock, whose timer would fire at once', async () => {
    const { client, systemClient, adapter, clock, queued } = setup()
    const days30 = 30 * 86_400_000
    const key = 'x'.repeat(1_010) // no place in line, whose renewals would tick all those days on the manual clock
    const grantee = adapter.gate!(key) // holds the gate; the key holds a plain write, with no TTL to time
    expect(await grantee.granted).toBe(true)
    await adapter.commit([], [{ type: 'set', key, value: 'plain' }])
    const waiting = client('b').locks.acquire(key, { wait: days30, autoRenew: false })
    await queued()
    await clock.advance(2 ** 31)
    expect(await settled(waiting)).toBe(false)
    let looks = 0
    const counted = (inner: Adapter): Adapter => ({ ...inner, get: (k) => (looks++, inner.get(k)) })
    const onSystem = systemClient('c', counted).locks.acquire(key, { wait: days30, autoRenew: false })
    // Real ms: c looks at the key once it was not granted within LOOK_AFTER, and sets its timers.
    for (let i = 0; i < 500 && looks === 0; i++) await new Promise((r) => setTimeout(r, 10))
    await new Promise((r) => setTimeout(r, 4 * LOOK_AFTER))
    expect(await settled(onSystem)).toBe(false)
    expect(looks).toBe(1) // once, not again at every timer that fired at once
    await adapter.commit([], [{ type: 'delete', key }])
    grantee.release()
    const next = (await waiting)!
    expect(next.owner).toBe('b')
    await next.release()
    const last = (await onSystem)!
    expect(last.owner).toBe('c')
    await last.release()
  })

  test('a frozen holder whose expiry is reported late (its reaper is frozen: expire events dropped, a fake): taken EXPIRED_GRACE after its TTL', async () => {
    const { client, adapter, clock, queued } = setup()
    const late = (inner: Adapter): Adapter => ({
      ...inner,
      watch: (prefix, sink, from) => inner.watch(prefix, { event: (ev) => ev.type !== 'expire' && sink.event(ev), error: (err) => sink.error(err) }, from),
    })
    const frozen = adapter.gate!('k')
    expect(await frozen.granted).toBe(true)
    const taken = await adapter.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: null, ttl: 1_000, owner: 'frozen' }], { gate: frozen })
    const token = taken.ok ? taken.entries[0]!.created : -1
    const waiting = client('b', late).locks.acquire('k', { ttl: 30_000, wait: 60_000, autoRenew: false })
    await queued() // it looked at LOOK_AFTER: 980 ms left
    await clock.advance(980 + 5 + EXPIRED_GRACE - 1)
    expect(await settled(waiting)).toBe(false)
    await clock.advance(1)
    const next = (await waiting)!
    expect(next.token).toBeGreaterThan(token)
    expect(frozen.held).toBe(false)
    await next.release()
    frozen.release()
  })

  test('a change while the wait reads the key (a fake race) is not lost: the key freed then is taken FREE_GRACE later', async () => {
    const { client, adapter, clock, queued } = setup()
    const grantee = adapter.gate!('k') // granted, and never takes the key
    expect(await grantee.granted).toBe(true)
    await adapter.commit([], [{ type: 'set', key: 'k', value: 'plain' }]) // no TTL: nothing to time
    const { race, wrap } = deletedOnFirstRead(adapter, 'k')
    const waiting = client('b', wrap).locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    expect(race.fired).toBe(true)
    await clock.advance(FREE_GRACE)
    const next = (await waiting)!
    expect(next.owner).toBe('b')
    expect(grantee.held).toBe(false)
    await next.release()
  })

  test('a takeover beaten by shared holds taken without gates (a fake race) leaves an intent that keeps new ones out, withdrawn when the wait ends', async () => {
    const { client, plainClient, adapter, clock, queued } = setup()
    const grantee = adapter.gate!('k') // granted, and never takes the key
    expect(await grantee.granted).toBe(true)
    const race = racing(setsK)
    let reader: Lock | null = null
    race.set(async () => (reader = await plainClient('s').locks.acquire('k', { mode: 'shared', autoRenew: false })))
    const waiting = client('b', race.wrap).locks.acquire('k', { wait: FREE_GRACE + 1_000, autoRenew: false })
    await queued()
    await clock.advance(FREE_GRACE)
    expect(reader).not.toBeNull()
    expect(await settled(waiting)).toBe(false)
    expect(await plainClient('t').locks.acquire('k', { mode: 'shared' })).toBeNull() // b's intent keeps it out
    await clock.advance(1_000)
    expect(await waiting).toBeNull()
    const after = (await plainClient('u').locks.acquire('k', { mode: 'shared', autoRenew: false }))!
    expect(after).not.toBeNull()
    await after.release()
    await reader!.release()
    grantee.release()
  })
})

describe('what a take costs', () => {
  test('the next in line takes the key in two commits (its place, its take) and leaves nothing to delete', async () => {
    const { client, adapter, queued } = setup()
    let commits = 0
    const counted = (inner: Adapter): Adapter => ({ ...inner, commit: (c, o, x) => (commits++, inner.commit(c, o, x)) })
    const lock = (await client('a').locks.acquire('k', { autoRenew: false }))!
    const waiting = client('b', counted).locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    await lock.release()
    const next = (await waiting)!
    await tick()
    expect(commits).toBe(2)
    expect((await adapter.list('\u0001q')).entries).toEqual([])
    await next.release()
  })

  test('a gate lost before the take, at the very end of the wait (a fake delay holds the take): null at once, no new request', async () => {
    const { client, adapter, clock, queued } = setup()
    const take = heldBack() // b's take through its gate waits until the test lets it go
    const lock = (await client('a').locks.acquire('k', { autoRenew: false }))!
    const waiting = client('b', slowTake(take)).locks.acquire('k', { wait: 500, autoRenew: false })
    await queued()
    const releasing = lock.release() // left to b, whose take waits
    await take.arrived
    await clock.advance(500 - LOOK_AFTER) // b's deadline, to the ms
    const thief = adapter.gate!('k', { steal: true })
    expect(await thief.granted).toBe(true)
    expect((await adapter.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: 'thief', owner: 'thief' }], { gate: thief })).ok).toBe(true)
    take.go()
    expect(await settled(waiting)).toBe(true)
    expect(await waiting).toBeNull()
    expect(await releasing).toBe(true)
    thief.release()
  })
})

describe('a hold taken without the gate is in the way', () => {
  /** a's plain try takes the free key past a grantee's gate; the grantee then lets the gate go. */
  async function barged(s: ReturnType<typeof setup>) {
    const grantee = s.adapter.gate!('k')
    expect(await grantee.granted).toBe(true)
    const held = (await s.client('a').locks.acquire('k', { autoRenew: false }))!
    expect(s.marked('k')).toBe(false)
    grantee.release()
    return held
  }

  test('a plain try gets the gate, cannot take over the hold, and gets null with the gate let go', async () => {
    const s = setup()
    const held = await barged(s)
    expect(await s.client('c').locks.acquire('k')).toBeNull()
    // With the gate held elsewhere, a plain try that finds the key held costs one commit.
    const grantee = s.adapter.gate!('k')
    expect(await grantee.granted).toBe(true)
    let commits = 0
    const counted = (inner: Adapter): Adapter => ({ ...inner, commit: (c, o, x) => (commits++, inner.commit(c, o, x)) })
    expect(await s.client('d', counted).locks.acquire('k')).toBeNull()
    expect(commits).toBe(1)
    grantee.release()
    expect(s.manager.taken('k')).toBe(false)
    expect(held.held).toBe(true)
    await held.release()
  })

  test('a waiter holding the gate behind it still gives up at its deadline, and lets the gate go', async () => {
    const s = setup()
    const held = await barged(s)
    const waiting = s.client('b').locks.acquire('k', { wait: 500, autoRenew: false })
    await tick()
    await s.clock.advance(499)
    expect(await settled(waiting)).toBe(false)
    await s.clock.advance(1)
    expect(await settled(waiting)).toBe(true)
    expect(await waiting).toBeNull()
    expect(s.manager.taken('k')).toBe(false)
    expect(held.held).toBe(true)
    await held.release()
  })

  test('its release that finds a steal\'s later life at the key (a fake race) is no release: false, STOLEN', async () => {
    const s = setup()
    const race = racing(deletesK)
    const grantee = s.adapter.gate!('k')
    expect(await grantee.granted).toBe(true)
    const held = (await s.client('a', race.wrap).locks.acquire('k', { autoRenew: false }))!
    let thief: Lock | null = null
    race.set(async () => (thief = await s.client('b').locks.acquire('k', { steal: true, autoRenew: false })))
    expect(await held.release()).toBe(false)
    expect(code(held)).toBe('STOLEN')
    expect(thief!.token).toBeGreaterThan(held.token)
    await thief!.release()
  })
})

describe('failures and cleanup', () => {
  test('a store failure during a gated take rejects with the store\'s error and lets the gate go', async () => {
    const { client, manager } = setup()
    const failing = (inner: Adapter): Adapter => ({
      ...inner,
      commit: async (checks, ops, options) => (setsK(ops) ? Promise.reject(new Error('store down (a fake failure)')) : inner.commit(checks, ops, options)),
    })
    await expect(client('a', failing).locks.acquire('k')).rejects.toThrow('store down')
    expect(manager.taken('k')).toBe(false)
  })

  test('a wait leaves no timer, no watch and no listener on the caller\'s signal behind', async () => {
    const { client, clock } = setup()
    const a = client('a')
    const watches = countedWatches({ watch: () => Promise.reject(new Error('unused')) })
    const counted = (inner: Adapter): Adapter => {
      const w = countedWatches(inner)
      watches.open = w.open
      return { ...inner, watch: w.watch }
    }
    const b = client('b', counted)
    const stop = new AbortController()
    // The clients' own timers, once each has held a lock (none of a hold's or a wait's).
    for (const c of [a, b]) await (await c.locks.acquire('j', { autoRenew: false }))!.release()
    const timers = clock.pending
    // Granted at once: no wait.
    const first = (await b.locks.acquire('k', { wait: 60_000, signal: stop.signal, autoRenew: false }))!
    await first.release()
    expect(clock.pending).toBe(timers)
    // Granted after a wait in line.
    const held = (await a.locks.acquire('k', { autoRenew: false }))!
    const waiting = b.locks.acquire('k', { wait: 60_000, signal: stop.signal, autoRenew: false })
    await tick()
    await clock.advance(LOOK_AFTER)
    await tick()
    await held.release()
    const next = (await waiting)!
    await next.release()
    await tick()
    expect(clock.pending).toBe(timers)
    expect(watches.open()).toBe(0)
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0)
  })

  test('a signal aborted while the wait reads the key rejects at once', async () => {
    const { client, queued } = setup()
    const stop = new AbortController()
    let armed = false
    const aborting = (inner: Adapter): Adapter => ({
      ...inner,
      get: async (key) => {
        const e = await inner.get(key)
        if (armed && key === 'k') {
          armed = false
          stop.abort(new Error('enough'))
        }
        return e
      },
    })
    const held = (await client('a').locks.acquire('k', { autoRenew: false }))!
    armed = true
    const waiting = client('b', aborting).locks.acquire('k', { wait: 60_000, signal: stop.signal }).catch((err: unknown) => err)
    await queued()
    expect(await settled(waiting)).toBe(true)
    expect(await waiting).toMatchObject({ message: 'enough' })
    await held.release()
  })

  test('an adapter with no capabilities at all takes locks without gates', async () => {
    const { client } = setup()
    const bare = (inner: Adapter): Adapter => {
      const { capabilities: _, gate: __, ...rest } = inner
      return rest as Adapter
    }
    const lock = (await client('a', bare).locks.acquire('k', { autoRenew: false }))!
    expect(lock).not.toBeNull()
    expect(await lock.release()).toBe(true)
  })
})
