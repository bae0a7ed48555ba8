/**
 * The gated acquire (src/core/acquire/gated.ts) against races its waits
 * and plain tries must survive, over the memory store with a fake lock
 * manager of this process in place of the browser's Web Locks
 * (./gated-kit). Each race is staged by a fake named so in its test: a read
 * held back, a watch that fails, a write slipped in before a commit. The
 * cases come from Stryker's survivors of gated.ts
 * (test/mutation/gated.stryker.config.mjs).
 */
import { afterEach, describe, expect, test } from 'vitest'
import type { Adapter, Entry, Op } from 'zaris'
import { EXPIRED_GRACE, FREE_GRACE, LOOK_AFTER } from '../../src/core/acquire/gated'
import { SHARED_OWNER } from '../../src/core/contract/reserved'
import { closeAll, deletedOnFirstRead, heldBack, settled, setup, tick } from './gated-kit'

afterEach(closeAll)

/** An adapter whose commits writing `k` run `before` first while it is set (a fake race, staged by the test), and are counted. */
function beforeEachTake() {
  let before: (() => Promise<unknown>) | undefined
  let commits = 0
  const wrap = (inner: Adapter): Adapter => ({
    ...inner,
    commit: async (checks, ops, options) => {
      if (ops.some((o: Op) => o.key === 'k' && o.type !== 'delete')) {
        commits++
        await before?.()
      }
      return inner.commit(checks, ops, options)
    },
  })
  return { wrap, commits: () => commits, set: (fn: (() => Promise<unknown>) | undefined) => (before = fn) }
}

describe('a plain try past a held gate (the fake lock manager holds it for a frozen grantee)', () => {
  test('a shared try whose group is made anew before each of its commits (a fake race) tries again past a round of no blocker, and gives up after 12 commits', async () => {
    const { client, adapter } = setup()
    const grantee = adapter.gate!('k') // granted, and never takes the key
    expect(await grantee.granted).toBe(true)
    // The group ended and another begun: each commit's check of the key fails, and what it finds is a group to join.
    const remade = () => adapter.commit([], [{ type: 'set', key: 'k', value: 1, owner: SHARED_OWNER, fresh: true }])
    const race = beforeEachTake()
    const b = client('b', race.wrap)
    let left = 5
    race.set(() => (left-- > 0 ? remade() : Promise.resolve()))
    // Four commits of a try, none blocked (the claim's rounds), then a second try whose second commit joins.
    const joined = (await b.locks.acquire('k', { mode: 'shared', autoRenew: false }))!
    expect(joined).not.toBeNull()
    expect(race.commits()).toBe(6)
    expect((await adapter.get('k'))?.value).toBe(2)
    expect(await joined.release()).toBe(true)
    // Remade before every commit: three tries of four commits, then null (a bound, not a spin).
    const before = race.commits()
    race.set(remade)
    expect(await b.locks.acquire('k', { mode: 'shared' })).toBeNull()
    expect(race.commits() - before).toBe(12)
    grantee.release()
  })
})

describe('a wait in line (the fake lock manager grants the gate late or never)', () => {
  test('a look that returns at the deadline (a read held back: a fake delay) gets null at once, with no timer left to fire', async () => {
    const { client, clock, adapter } = setup()
    const held = (await client('a').locks.acquire('k', { autoRenew: false }))!
    const read = heldBack()
    let armed = true
    const slowRead = (inner: Adapter): Adapter => ({
      ...inner,
      get: async (key) => {
        if (armed && key === 'k') {
          armed = false
          await read.pass()
        }
        return inner.get(key)
      },
    })
    const waiting = client('b', slowRead).locks.acquire('k', { wait: 500, autoRenew: false })
    await tick()
    await clock.advance(LOOK_AFTER)
    await read.arrived
    await clock.advance(500 - LOOK_AFTER) // the deadline, to the ms, while the look reads
    read.go()
    expect(await settled(waiting)).toBe(true)
    expect(await waiting).toBeNull()
    expect((await adapter.get('k'))?.owner).toBe('a')
    await held.release()
  })

  test('a watch that fails while the wait reads the key (a fake failure) makes it look again: the key freed then is taken FREE_GRACE later', async () => {
    const { client, adapter, clock, queued } = setup()
    const grantee = adapter.gate!('k') // granted, and never takes the key
    expect(await grantee.granted).toBe(true)
    await adapter.commit([], [{ type: 'set', key: 'k', value: 'plain' }]) // no TTL: the look that sees it waits for an event
    const { race, wrap } = deletedOnFirstRead(adapter, 'k')
    const racing = (inner: Adapter): Adapter => ({
      ...wrap(inner),
      // The delete is not told: the watch fails instead.
      watch: (prefix, sink, from) => inner.watch(prefix, { event: (ev) => (ev.type === 'delete' ? sink.error(new Error('watch lost (a fake failure)')) : sink.event(ev)), error: (err) => sink.error(err) }, from),
    })
    const waiting = client('b', racing).locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    expect(race.fired).toBe(true)
    await clock.advance(FREE_GRACE)
    const next = (await waiting)!
    expect(next.owner).toBe('b')
    expect(grantee.held).toBe(false)
    await next.release()
  })

  test('a takeover whose place in line was deleted (a fake race) forgets the place and takes the key at the next grace, without it', async () => {
    const { client, adapter, clock, queued } = setup()
    const frozen = adapter.gate!('k') // a frozen holder: its gate, and an entry that expires
    expect(await frozen.granted).toBe(true)
    expect((await adapter.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: null, ttl: 1_000, owner: 'frozen' }], { gate: frozen })).ok).toBe(true)
    const race = beforeEachTake()
    const places = async () => (await adapter.list('\u0001q')).entries
    race.set(async () => {
      race.set(undefined)
      const [place] = (await places()) as [Entry]
      await adapter.commit([], [{ type: 'delete', key: place.key }])
    })
    const waiting = client('b', race.wrap).locks.acquire('k', { ttl: 30_000, wait: 60_000, autoRenew: false })
    await queued()
    expect(await places()).toHaveLength(1)
    await clock.advance(1_000 - 20 + EXPIRED_GRACE) // expired at 1 000; the first takeover, refused: its place is gone
    expect(race.commits()).toBe(1)
    expect(await settled(waiting)).toBe(false)
    await clock.advance(EXPIRED_GRACE) // long before its place's renewal (a third of its 10 s) would find it gone
    expect(await settled(waiting)).toBe(true)
    const next = (await waiting)!
    expect(next.owner).toBe('b')
    expect(race.commits()).toBe(2)
    expect(frozen.held).toBe(false)
    expect(await places()).toEqual([])
    await next.release()
  })
})
