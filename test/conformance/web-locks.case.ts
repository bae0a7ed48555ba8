/**
 * zaris/web-locks on one adapter: the Web Locks API's grant order across
 * clients, which rests on the acquire machine's line-respecting tries (an
 * internal option the facade sets), and mutual exclusion of its callbacks.
 * The full Web Locks cases run in test/web-locks on each store; these are
 * the ones every adapter must pass.
 */
import { expect } from 'vitest'
import { Client, type Adapter } from 'zaris'
import { webLocks, type WebLock } from 'zaris/web-locks'
import type { FixtureFactory } from './fixture'
import { onFreshStore, sleep, until, type Named } from './util'
import { WindowLog } from './windows'

/**
 * An adapter whose commits can be held back for a while (a fake pause of
 * one client, named so): a waiter that was woken but has not yet taken the
 * lock, as a slow process or a busy tab would be.
 */
function pausable(inner: Adapter): { adapter: Adapter; pause(): void; resume(): void } {
  let gate: Promise<void> | undefined
  let open = () => {}
  const commit: Adapter['commit'] = async (checks, ops, options) => {
    while (gate) await gate
    return inner.commit(checks, ops, options)
  }
  const adapter = new Proxy(inner, {
    get(target, p) {
      if (p === 'commit') return commit
      // A take parked at the store (commitOnChange) is tried there on the release, paused or not: no window
      // between waking and taking to hold open. This client takes after the event, as without the capability.
      if (p === 'capabilities') return { ...target.capabilities, commitOnChange: false }
      const v = Reflect.get(target, p, target) as unknown
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  })
  return {
    adapter,
    pause() {
      gate = new Promise((r) => (open = r))
    },
    resume() {
      gate = undefined
      open()
    },
  }
}

export function lineCases(factory: FixtureFactory, t: Named): void {
  const withStore = onFreshStore(factory)

  t('web-locks: a request never takes a free lock ahead of a waiter in line (a plain try may); it is granted after it', withStore(async (f) => {
    const holder = await f.connect({ id: 'holder' })
    const slow = pausable(await f.adapter())
    const waiter = new Client(slow.adapter, { id: 'waiter' })
    const late = await f.connect({ id: 'late' })
    const barger = await f.connect({ id: 'barger' })
    try {
      const locks = webLocks(late)
      const held = (await holder.locks.acquire('wl', { ttl: 20_000 }))!
      const waiting = waiter.locks.acquire('wl', { ttl: 20_000, wait: 20_000 })
      await until(async () => (await locks.query()).pending.length === 1)
      // The waiter is woken by the release but cannot take the lock yet: the lock is free, the line is not empty.
      slow.pause()
      await held.release()
      expect(await holder.locks.holder('wl')).toBeUndefined()
      expect(await locks.request('wl', { ifAvailable: true }, (lock) => lock)).toBeNull()
      const order: string[] = []
      const request = locks.request('wl', (lock) => {
        order.push(`request ${lock!.token}`)
      })
      await until(async () => (await locks.query()).pending.map((p) => p.clientId).join() === 'waiter,late')
      // zaris's own plain try still barges in (documented): only the facade's requests respect the line.
      const barged = (await barger.locks.acquire('wl', { ttl: 20_000 }))!
      expect(barged).not.toBeNull()
      await barged.release()
      slow.resume()
      const w = (await waiting)!
      order.push(`waiter ${w.token}`)
      await sleep(20)
      await w.release()
      await request
      expect(order.map((o) => o.split(' ')[0])).toEqual(['waiter', 'request'])
      expect(Number(order[1]!.split(' ')[1])).toBeGreaterThan(w.token)
    } finally {
      slow.resume()
      await waiter.close()
    }
  }), 3)

  t('web-locks: callbacks of three clients never overlap, shared ones do (mixed modes, checked as a history)', withStore(async (f) => {
    const clients = await Promise.all([0, 1, 2].map((i) => f.connect({ id: `c${i}` })))
    const log = new WindowLog()
    let shared = 0
    await Promise.all(clients.map(async (c, i) => {
      const locks = webLocks(c)
      for (let r = 0; r < 6; r++) {
        const mode = (i + r) % 3 === 0 ? 'exclusive' : 'shared'
        if (mode === 'shared') shared++
        await locks.request('wl', { mode, zaris: { ttl: 20_000 } }, async (lock: WebLock | null) => {
          const close = log.open('wl', lock!.mode, c.id, lock!.token)
          await sleep(4 + ((i * 5 + r * 3) % 7))
          close()
        })
      }
    }))
    const report = log.check()
    expect(report.violations).toEqual([])
    expect(report.windows).toBe(18)
    expect(shared).toBe(12)
    expect(await clients[0]!.locks.query()).toEqual({ held: [], pending: [] })
    // Shared callbacks do run side by side: the second is granted while the first holds.
    const [first, second] = [webLocks(clients[0]!), webLocks(clients[1]!)]
    const both = await first.request('wl', { mode: 'shared' }, () => second.request('wl', { mode: 'shared' }, async () => (await first.query()).held.length))
    expect(both).toBe(2)
  }), 6)
}
