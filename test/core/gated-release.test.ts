/**
 * The release of a hold taken through a gate (src/core/hold/hand-on.ts and
 * the gate lines of src/core/hold/hold.ts) and the waiter's place in line
 * under gates (src/core/acquire/gated.ts: `tend`, the claim's leave), over
 * the memory store with a fake lock manager of this process in place of the
 * browser's Web Locks (./gated-kit). A failing watch, a commit held back and
 * `ownerGone` are fakes too, named so where a test stages them.
 */
import { afterEach, describe, expect, test } from 'vitest'
import type { Adapter, Op } from 'zaris'
import { IN_LINE } from '../../src/core/acquire/checks'
import { FREE_GRACE } from '../../src/core/acquire/gated'
import { HAND_ON_WAIT } from '../../src/core/hold/hand-on'
import { closeAll, code, gateWith, heldBack, setup, tick } from './gated-kit'

afterEach(closeAll)

const deletesAt = (key: string) => (ops: Op[]) => ops.some((o) => o.key === key && o.type === 'delete')

/** An adapter that counts its commits, and holds back the next one that matches until `go()` (a fake delay). */
function watched() {
  let commits = 0
  let hold: { match: (ops: Op[]) => boolean; step: ReturnType<typeof heldBack> } | undefined
  const wrap = (inner: Adapter): Adapter => ({
    ...inner,
    commit: async (checks, ops, options) => {
      commits++
      if (hold?.match(ops)) {
        const { step } = hold
        hold = undefined
        await step.pass()
      }
      return inner.commit(checks, ops, options)
    },
  })
  return {
    wrap,
    commits: () => commits,
    /** Holds the next matching commit: `arrived` once it came, `go()` lets it on. */
    holdNext(match: (ops: Op[]) => boolean) {
      const step = heldBack()
      hold = { match, step }
      return step
    },
  }
}

describe('the hand-on', () => {
  test('a lock or lease left to the next in line is released with no write of its own', async () => {
    const { client, queued } = setup()
    const w = watched()
    const [a, b] = [client('a', w.wrap), client('b')]
    const lock = (await a.locks.acquire('k', { autoRenew: false }))!
    const waiting = b.locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    const before = w.commits()
    expect(await lock.release()).toBe(true)
    expect(w.commits()).toBe(before)
    const next = (await waiting)!
    expect(next.token).toBeGreaterThan(lock.token)
    await next.release()
    const lease = (await a.leases.grant('k', { value: 1, autoRenew: false }))!
    const leaseWaiting = b.leases.grant('k', { value: 2, wait: 60_000, autoRenew: false })
    await queued()
    const leaseBefore = w.commits()
    expect(await lease.revoke()).toBe(true)
    expect(w.commits()).toBe(leaseBefore)
    const nextLease = (await leaseWaiting)!
    expect(nextLease.token).toBeGreaterThan(lease.token)
    expect(nextLease.value).toBe(2)
    await nextLease.revoke()
  })

  test("a write at another key under the same prefix is no hand-on: the release still deletes its entry after HAND_ON_WAIT", async () => {
    const { client, adapter, clock } = setup()
    const lock = (await client('a').locks.acquire('k', { autoRenew: false }))!
    const silent = adapter.gate!('k') // in line, and never takes the key
    const releasing = lock.release()
    await tick()
    await adapter.commit([], [{ type: 'set', key: 'kx', value: 1 }]) // the watch of 'k' is a prefix watch: it sees this
    await tick()
    expect((await adapter.get('k'))?.owner).toBe('a')
    await clock.advance(HAND_ON_WAIT)
    expect(await releasing).toBe(true)
    expect(await adapter.get('k')).toBeUndefined()
    silent.release()
  })

  test('when its watch of the key fails (a fake failure), the release deletes its entry at once', async () => {
    const { client, adapter } = setup()
    let failing = false
    const a = client('a', (inner) => ({
      ...inner,
      watch: (prefix, sink, from) => (failing ? Promise.reject(new Error('watch down (a fake failure)')) : inner.watch(prefix, sink, from)),
    }))
    const lock = (await a.locks.acquire('k', { autoRenew: false }))!
    const silent = adapter.gate!('k') // in line, and never takes the key
    failing = true
    const releasing = lock.release()
    let done = false
    void releasing.then(() => (done = true))
    await tick()
    expect(done).toBe(true)
    expect(await releasing).toBe(true)
    expect(await adapter.get('k')).toBeUndefined()
    expect(await silent.granted).toBe(true)
    silent.release()
  })
})

describe('a gated hold ends', () => {
  test('when another client takes its gate, even with no write: STOLEN at once, naming the gate', async () => {
    const { client, adapter } = setup()
    const lock = (await client('a').locks.acquire('k', { autoRenew: false }))!
    const thief = adapter.gate!('k', { steal: true })
    expect(await thief.granted).toBe(true)
    expect(lock.held).toBe(false)
    expect(code(lock)).toBe('STOLEN')
    expect(String((lock.signal.reason as Error).message)).toContain('gate')
    expect(await lock.release()).toBe(false)
    thief.release()
  })

  test('a release whose entry was deleted meanwhile (a fake race) answers false, and does not throw', async () => {
    const { client, adapter } = setup()
    const w = watched()
    const lock = (await client('a', w.wrap).locks.acquire('k', { autoRenew: false }))!
    const held = w.holdNext(deletesAt('k'))
    const releasing = lock.release()
    await held.arrived
    await adapter.commit([], [{ type: 'delete', key: 'k' }])
    held.go()
    await expect(releasing).resolves.toBe(false)
    expect(code(lock)).not.toBe('RELEASED')
  })

  test('a shared hold lets its gate go before its delete reaches the store: the next asker is granted at once', async () => {
    const { client, adapter } = setup()
    const w = watched()
    const shared = (await client('a', w.wrap).locks.acquire('k', { mode: 'shared', autoRenew: false }))!
    const held = w.holdNext((ops) => ops.some((o) => o.type === 'delete'))
    const releasing = shared.release()
    await held.arrived
    const next = adapter.gate!('k')
    let granted = false
    void next.granted.then((g) => (granted = g))
    await tick()
    expect(granted).toBe(true)
    held.go()
    expect(await releasing).toBe(true)
    next.release()
  })

  test.each(['closes', 'expires'] as const)('a hold that ends (%s) while its takeover steals the gate (a slow steal: a fake delay) lets the gate go', async (how) => {
    const { client, adapter, manager, queued, clock } = setup()
    const grantee = adapter.gate!('k') // granted, and never takes the key
    expect(await grantee.granted).toBe(true)
    const steal = heldBack() // b's steal of the gate waits until the test lets it go
    const slowSteal = (inner: Adapter): Adapter => ({
      ...inner,
      gate: (key, o) => {
        const g = inner.gate!(key, o)
        return gateWith(g, { steal: () => steal.pass().then(() => g.steal()) })
      },
    })
    const b = client('b', slowSteal)
    const waiting = b.locks.acquire('k', { ttl: 1_000, wait: 60_000, autoRenew: false }).catch((err: unknown) => err)
    await queued()
    await clock.advance(FREE_GRACE)
    await steal.arrived // b took the key, and steals the gate
    if (how === 'closes') await Promise.all([b.close(), tick().then(steal.go)])
    else {
      await clock.advance(1_000) // the hold's deadline passes
      steal.go()
    }
    const got = await waiting
    await tick()
    if (how === 'expires') expect(got).toMatchObject({ held: false })
    expect(grantee.held).toBe(false)
    expect(manager.taken('k')).toBe(false)
  })
})

describe('the line under gates', () => {
  /** A client's adapter that says owners the test names are gone (capability `ownerGone`, a fake, as IndexedDB's for a closed tab). */
  function owners(capable: boolean) {
    const dead = new Set<string>()
    const waiting = new Map<string, () => void>()
    let asked = 0
    const wrap = (inner: Adapter): Adapter => ({
      ...inner,
      capabilities: { ...inner.capabilities, ownerGone: capable },
      ownerGone: (owner, signal) =>
        new Promise<void>((resolve, reject) => {
          asked++
          if (dead.has(owner)) return resolve()
          waiting.set(owner, resolve)
          signal.addEventListener('abort', () => reject(signal.reason), { once: true })
        }),
    })
    return {
      wrap,
      asked: () => asked,
      kill(owner: string) {
        dead.add(owner)
        waiting.get(owner)?.()
      },
    }
  }

  /** A dead waiter's place in k's line (its client is gone). */
  const deadPlace = (adapter: Adapter) => adapter.commit([], [{ type: 'set', key: '\u0001qk\u0001c.dead', value: 'exclusive', owner: 'c', ttl: 10_000 }])
  const line = async (adapter: Adapter) => (await adapter.list('\u0001q')).entries.map((e) => e.owner).sort()

  test.each([true, false])("a waiter drops the place of a gone client ahead of it, where the store can tell (IN_LINE's onQueued: %s, told once)", async (told1) => {
    const { client, adapter, queued } = setup()
    const gone = owners(true)
    const lock = (await client('a').locks.acquire('k', { autoRenew: false }))!
    await deadPlace(adapter)
    let told = 0
    const inLine = told1 ? { [IN_LINE]: { onQueued: () => told++ } } : {}
    const waiting = client('b', gone.wrap).locks.acquire('k', { wait: 60_000, autoRenew: false, ...inLine } as never)
    await queued()
    expect(await line(adapter)).toEqual(['b', 'c'])
    gone.kill('c')
    await tick()
    expect(await line(adapter)).toEqual(['b'])
    expect(told).toBe(told1 ? 1 : 0)
    expect(gone.asked()).toBe(1) // first in line now: nobody ahead to ask about
    await lock.release()
    await ((await waiting) as { release(): Promise<boolean> }).release()
  })

  test('a store that cannot tell keeps the place: it is not asked', async () => {
    const { client, adapter, queued } = setup()
    const gone = owners(false)
    const lock = (await client('a').locks.acquire('k', { autoRenew: false }))!
    await deadPlace(adapter)
    const waiting = client('b', gone.wrap).locks.acquire('k', { wait: 60_000, autoRenew: false })
    await queued()
    gone.kill('c')
    await tick()
    expect(await line(adapter)).toEqual(['b', 'c'])
    expect(gone.asked()).toBe(0)
    await lock.release()
    await (await waiting)!.release()
  })
})
