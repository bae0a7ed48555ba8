/**
 * Acquires through a store's gates (src/core/acquire/gated.ts) and the
 * release that hands a key on (src/core/hold/hand-on.ts), over the memory
 * store with a fake lock manager of this process in place of the browser's
 * Web Locks (test/core/gated-store.ts; the real ones run in Chromium:
 * test/indexeddb), on a ManualClock.
 */
import { afterEach, describe, expect, test } from 'vitest'
import type { Adapter, Gate, Lock } from 'zaris'
import { IN_LINE } from '../../src/core/acquire/checks'
import { EXPIRED_GRACE, FREE_GRACE } from '../../src/core/acquire/gated'
import { HAND_ON_WAIT } from '../../src/core/hold/hand-on'
import { closeAll, code, setup, tick } from './gated-kit'

afterEach(closeAll)

describe('plain tries', () => {
  test('take a free key through its gate (the entry is marked); another plain try gets null while it is held', async () => {
    const { client, marked, adapter } = setup()
    const [a, b] = [client('a'), client('b')]
    const lock = (await a.locks.acquire('k', { autoRenew: false }))!
    expect(lock).not.toBeNull()
    expect(marked('k')).toBe(true)
    expect(await b.locks.acquire('k')).toBeNull()
    expect(await lock.release()).toBe(true)
    expect(await adapter.get('k')).toBeUndefined()
    expect(await adapter.gate!('k').taken()).toBe(true) // only the gate just asked for
  })

  test('one that finds the gate taken but the key free takes the key without the gate; one in line gets null; the gate holder waits for it', async () => {
    const { client, adapter, marked, queued } = setup()
    const grantee = adapter.gate!('k') // granted, and never takes the key (a frozen tab's grant)
    expect(await grantee.granted).toBe(true)
    const [a, b, c] = [client('a'), client('b'), client('c')]
    const barged = (await a.locks.acquire('k', { autoRenew: false }))!
    expect(barged).not.toBeNull()
    expect(marked('k')).toBe(false)
    expect(await c.locks.acquire('k', { [IN_LINE]: {} } as never)).toBeNull()
    const waiting = b.locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    grantee.release()
    await tick()
    // b holds the gate now, and waits for the plain hold it cannot take over.
    expect((await adapter.get('k'))?.owner).toBe('a')
    expect(await barged.release()).toBe(true)
    const next = (await waiting)!
    expect(next.token).toBeGreaterThan(barged.token)
    expect(marked('k')).toBe(true)
    await next.release()
  })
})

describe('waiting in line', () => {
  test('the next in line takes the key over in its own take: the release writes no delete, and says it released', async () => {
    const { client, events, adapter, queued } = setup()
    const [a, b] = [client('a'), client('b')]
    const held = (await a.locks.acquire('k', { autoRenew: false }))!
    const waiting = b.locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    const line = await adapter.list('\u0001q')
    expect(line.entries.map((e) => e.owner)).toEqual(['b']) // its place, for query()
    expect(await held.release()).toBe(true)
    expect(code(held)).toBe('RELEASED')
    const next = (await waiting)!
    expect(next.token).toBeGreaterThan(held.token)
    expect(events.filter((e) => e.key === 'k').map((e) => [e.type, e.owner])).toEqual([['put', 'a'], ['put', 'b']])
    expect((await adapter.list('\u0001q')).entries).toEqual([]) // the take deleted the place
    await next.release()
    expect(events.filter((e) => e.key === 'k').map((e) => e.type)).toEqual(['put', 'put', 'delete'])
  })

  test('a release whose next in line never takes the key deletes its entry after HAND_ON_WAIT', async () => {
    const { client, adapter, clock } = setup()
    const a = client('a')
    const held = (await a.locks.acquire('k', { autoRenew: false }))!
    const silent = adapter.gate!('k') // in line, and never takes
    const releasing = held.release()
    await tick()
    expect((await adapter.get('k'))?.owner).toBe('a')
    await clock.advance(HAND_ON_WAIT)
    expect(await releasing).toBe(true)
    expect(await adapter.get('k')).toBeUndefined()
    expect(await silent.granted).toBe(true)
    silent.release()
  })

  test('a release that saw nobody at the gate, whose delete the next gate holder beat: released all the same; a delete refused otherwise is not', async () => {
    const { client, adapter } = setup()
    // a's delete of k waits until b, asking after a let the gate go, has taken the key over a's entry.
    let beforeDelete: (() => Promise<unknown>) | undefined
    const wrap = (inner: Adapter): Adapter => ({
      ...inner,
      commit: async (checks, ops, options) => {
        const run = ops.some((o) => o.key === 'k' && o.type === 'delete') ? beforeDelete : undefined
        beforeDelete = undefined
        if (run) await run()
        return inner.commit(checks, ops, options)
      },
    })
    const [a, b] = [client('a', wrap), client('b')]
    const held = (await a.locks.acquire('k', { autoRenew: false }))!
    let next: Lock | null = null
    beforeDelete = async () => (next = await b.locks.acquire('k', { autoRenew: false }))
    expect(await held.release()).toBe(true)
    expect(code(held)).toBe('RELEASED')
    expect(next!.token).toBeGreaterThan(held.token)
    expect((await adapter.get('k'))?.owner).toBe('b')
    expect(await next!.release()).toBe(true)
    // The same race with a write of no owner in b's place (no gate, no later life of a gate holder): not released.
    const again = (await a.locks.acquire('k', { autoRenew: false }))!
    beforeDelete = () => adapter.commit([], [{ type: 'set', key: 'k', value: 1 }])
    expect(await again.release()).toBe(false)
    expect(code(again)).not.toBe('RELEASED')
  })

  test('the wait runs out: null, its place in line left, its gate let go', async () => {
    const { client, adapter, clock, manager, queued } = setup()
    const [a, b] = [client('a'), client('b')]
    const held = (await a.locks.acquire('k', { autoRenew: false }))!
    const waiting = b.locks.acquire('k', { wait: 500, autoRenew: false })
    await queued()
    await clock.advance(500)
    expect(await waiting).toBeNull()
    await tick()
    expect((await adapter.list('\u0001q')).entries).toEqual([])
    await held.release()
    expect(manager.taken('k')).toBe(false)
  })

  test('an aborted wait rejects with the reason, and leaves neither gate nor place', async () => {
    const { client, adapter, manager, queued } = setup()
    const [a, b] = [client('a'), client('b')]
    const held = (await a.locks.acquire('k', { autoRenew: false }))!
    const stop = new AbortController()
    const waiting = b.locks.acquire('k', { wait: 60_000, signal: stop.signal })
    await queued()
    stop.abort(new Error('enough'))
    await expect(waiting).rejects.toThrow('enough')
    await tick()
    expect((await adapter.list('\u0001q')).entries).toEqual([])
    await held.release()
    expect(manager.taken('k')).toBe(false)
  })

  test('a client that closes while it waits lets the gate go; the next waiter takes the key', async () => {
    const { client, queued } = setup()
    const [a, b, c] = [client('a'), client('b'), client('c')]
    const held = (await a.locks.acquire('k', { autoRenew: false }))!
    const gone = b.locks.acquire('k', { wait: 60_000 }).catch((err: unknown) => err)
    await queued()
    const third = c.locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    await b.close()
    expect(await gone).toMatchObject({ code: 'CLOSED' })
    await held.release()
    expect((await third)?.owner).toBe('c')
  })
})

describe('a holder that cannot act', () => {
  test('past its TTL (frozen: its gate kept, its timers stopped): a waiter takes the key once it expired, then steals the gate', async () => {
    const { client, clock, adapter, queued } = setup()
    const b = client('b')
    // The frozen holder: its gate and its entry, and nothing that runs (no deadline, no renewal).
    const frozen = adapter.gate!('k')
    expect(await frozen.granted).toBe(true)
    let lost = false
    frozen.onLost(() => (lost = true))
    const taken = await adapter.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: null, ttl: 1_000, owner: 'frozen' }], { gate: frozen })
    expect(taken.ok).toBe(true)
    const token = taken.ok ? taken.entries[0]!.created : -1
    const waiting = b.locks.acquire('k', { ttl: 30_000, wait: 60_000, autoRenew: false })
    await queued()
    await clock.advance(1_000 - 20)
    expect(await adapter.get('k')).toBeUndefined()
    expect(lost).toBe(false)
    await clock.advance(EXPIRED_GRACE + 5)
    const next = (await waiting)!
    expect(next.token).toBeGreaterThan(token)
    expect(lost).toBe(true)
    expect(frozen.held).toBe(false)
    // Thawed, the frozen holder's write through its old gate is an ordinary one: the key is b's.
    expect((await adapter.commit([{ key: 'k', created: token }], [{ type: 'set', key: 'k', value: 'stale', owner: 'frozen' }], { gate: frozen })).ok).toBe(false)
    await next.release()
    frozen.release()
  })

  test('a holder whose own deadline passes lets its gate go: the next in line takes the key over its entry before the store expires it', async () => {
    const { client, clock, queued } = setup()
    const [a, b] = [client('a'), client('b')]
    const held = (await a.locks.acquire('k', { ttl: 1_000, autoRenew: false }))!
    const waiting = b.locks.acquire('k', { ttl: 30_000, wait: 60_000, autoRenew: false })
    await queued()
    await clock.advance(1_000 - 20 - 12) // the holder's deadline: TTL minus the drift margin (1 % + 2 ms)
    const next = (await waiting)!
    expect(next.token).toBeGreaterThan(held.token)
    expect(code(held)).toBe('EXPIRED')
    expect(await held.release()).toBe(false)
    await next.release()
  })

  test('a grantee that never takes the key: the next waiter takes it FREE_GRACE after it saw it free, and the grantee loses the gate', async () => {
    const { client, clock, adapter, queued } = setup()
    const [a, b] = [client('a'), client('b')]
    const held = (await a.locks.acquire('k', { autoRenew: false }))!
    const frozen = adapter.gate!('k')
    let lost = false
    frozen.onLost(() => (lost = true))
    await tick()
    const waiting = b.locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    const releasing = held.release() // the frozen grantee is granted the gate, and takes nothing
    await tick()
    await clock.advance(HAND_ON_WAIT) // the release waits for it to take, then deletes
    expect(await releasing).toBe(true)
    expect(await frozen.granted).toBe(true)
    await tick()
    await clock.advance(FREE_GRACE - 1)
    expect((await adapter.get('k'))).toBeUndefined()
    await clock.advance(1)
    const next = (await waiting)!
    expect(next.owner).toBe('b')
    expect(lost).toBe(true)
    expect(frozen.held).toBe(false)
    await next.release()
  })

  test('a gate taken before the take is asked for again; the hold comes once the taker lets go', async () => {
    const { client, adapter, queued } = setup()
    let pause: (() => void) | undefined
    const paused = new Promise<void>((resolve) => (pause = resolve))
    let arrive!: () => void
    const arrived = new Promise<void>((r) => (arrive = r))
    // b's first take through its gate is held back (a fake delay) until the test lets it go.
    const slow = (inner: Adapter): Adapter => ({
      ...inner,
      async commit(checks, ops, options) {
        if (options?.gate && ops.some((o) => o.key === 'k' && o.type === 'set') && pause) {
          pause = undefined
          arrive()
          await held
        }
        return inner.commit(checks, ops, options)
      },
    })
    let free!: () => void
    const held = new Promise<void>((r) => (free = r))
    void paused
    const [a, b] = [client('a'), client('b', slow)]
    const lock = (await a.locks.acquire('k', { autoRenew: false }))!
    const waiting = b.locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    const releasing = lock.release() // left to b, whose take waits
    await arrived // b holds the gate, its take waits
    const thief: Gate = adapter.gate!('k', { steal: true })
    expect(await thief.granted).toBe(true)
    expect((await adapter.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: 'thief', owner: 'thief' }], { gate: thief })).ok).toBe(true)
    free()
    await tick()
    expect((await adapter.get('k'))?.owner).toBe('thief')
    expect(await releasing).toBe(true) // the key changed: handed on
    thief.release()
    const next = (await waiting)!
    expect(next.owner).toBe('b')
    expect(next.token).toBeGreaterThan(lock.token)
    await next.release()
  })
})

describe('steal, modes', () => {
  test('a steal takes the gate and the key: the old hold ends STOLEN at once', async () => {
    const { client } = setup()
    const [a, b] = [client('a'), client('b')]
    const held = (await a.locks.acquire('k', { autoRenew: false }))!
    void held.signal // watched
    const stolen = (await b.locks.acquire('k', { steal: true, autoRenew: false }))!
    expect(stolen.token).toBeGreaterThan(held.token)
    expect(held.held).toBe(false)
    expect(code(held)).toBe('STOLEN')
    expect(await held.release()).toBe(false)
    await stolen.release()
  })

  test('shared holds share the gate; an exclusive request waits for both, and shared ones leave their group in their own commits', async () => {
    const { client, adapter, manager, queued } = setup()
    const [a, b, c] = [client('a'), client('b'), client('c')]
    const r1 = (await a.locks.acquire('k', { mode: 'shared', autoRenew: false }))!
    const r2 = (await b.locks.acquire('k', { mode: 'shared', autoRenew: false }))!
    expect(await c.locks.acquire('k')).toBeNull()
    const writer = c.locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    expect(await r1.release()).toBe(true)
    expect((await adapter.get('k'))?.value).toBe(1) // the group: one shared hold left
    expect(await r2.release()).toBe(true)
    const w = (await writer)!
    expect(w.mode).toBe('exclusive')
    expect(w.token).toBeGreaterThan(r2.token)
    await w.release()
    expect(manager.taken('k')).toBe(false)
  })

  test('a lease and an election term go through the gate too; a lock of several keys does not', async () => {
    const { client, marked } = setup()
    const a = client('a')
    const lease = (await a.leases.grant('k', { value: 'v', autoRenew: false }))!
    expect(marked('k')).toBe(true)
    await lease.revoke()
    const term = (await a.election('k').campaign())!
    expect(marked('k')).toBe(true)
    await term.revoke()
    const set = (await a.locks.acquire(['k', 'j'], { autoRenew: false }))!
    expect(marked('k')).toBe(false)
    await set.release()
  })
})
