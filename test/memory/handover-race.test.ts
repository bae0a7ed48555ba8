/**
 * A waiter that gives up while the store is handing it the lock (issue 31's
 * race): its take is parked at a store that hands over; its caller aborts
 * in the same tick as the holder's release, before it or after it, a few
 * microtasks or a macrotask apart. Whichever the store did first, the
 * waiter must not end up holding: the abort rejects its acquire, and a
 * hold the store granted just before is released by the machine itself.
 * Every round's commits are recorded and judged by the lincheck checker.
 */
import { expect, test } from 'vitest'
import { Client } from 'zaris'
import { LocalStore } from '../../src/adapters/kit/local-store'
import { localAdapter } from '../../src/adapters/kit/local-adapter'
import { systemClock } from '../../src/core/time/clock'
import { MemoryHistory, recordingAdapter } from '../lincheck/recorder'
import { verifyHistory } from '../lincheck/verify'

const ROUNDS = 40

/** `n` microtask hops, or a macrotask for -1. */
async function hops(n: number): Promise<void> {
  if (n < 0) return new Promise((r) => setTimeout(r, 0))
  for (let i = 0; i < n; i++) await Promise.resolve()
}

test(`${ROUNDS} rounds of a waiter giving up in the tick its parked take is granted: it never ends up holding, the history is linearizable`, async () => {
  const store = new LocalStore({ clock: systemClock })
  const history = new MemoryHistory(() => performance.now())
  const clientOf = (id: string) => new Client(recordingAdapter(localAdapter('memory', store), history, id), { id })
  const h = clientOf('h')
  const w = clientOf('w')
  const outcomes = { gaveUp: 0, wonThenLetGo: 0, wonFirst: 0 }
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const held = (await h.locks.acquire('lock', { ttl: 20_000 }))!
      const stop = new AbortController()
      const waiting = w.locks.acquire('lock', { ttl: 20_000, wait: 10_000, signal: stop.signal }).then(
        (lock) => ({ lock, beforeAbort: !stop.signal.aborted }),
        (err: unknown) => ({ err }),
      )
      while (store.parked !== 1) await hops(-1)
      const before = round % 2 === 0
      const gap = [0, 1, 3, -1][round % 4]!
      let granted = false
      if (before) {
        stop.abort(new Error('gave up'))
        await hops(gap)
        granted = (await held.release()) && store.get('lock')?.owner === 'w'
      } else {
        const releasing = held.release()
        granted = store.get('lock')?.owner === 'w'
        await hops(gap)
        stop.abort(new Error('gave up'))
        await releasing
      }
      const r = await waiting
      if ('lock' in r) {
        // Granted and told before the caller gave up: an ordinary win (a macrotask after the release).
        expect(r.beforeAbort, `round ${round}: the acquire that gave up resolved a lock`).toBe(true)
        await r.lock!.release()
        outcomes.wonFirst++
        continue
      }
      // The machine lets go of a hold the store granted before the abort: give it its release.
      for (let i = 0; i < 50 && store.get('lock') !== undefined; i++) await hops(-1)
      expect(store.get('lock'), `round ${round}: the waiter that gave up still holds the lock`).toBeUndefined()
      expect(store.list('q').entries.filter((e) => e.owner === 'w')).toEqual([])
      expect(store.parked).toBe(0)
      if (granted) outcomes.wonThenLetGo++
      else outcomes.gaveUp++
    }
  } finally {
    await Promise.all([h.close(), w.close()])
  }
  const verdict = verifyHistory(history.events)
  if (!verdict.ok) throw new Error(verdict.report)
  // Both orders came up: the release first (granted, then let go) and the abort first (never granted).
  expect(outcomes.wonThenLetGo).toBeGreaterThan(0)
  expect(outcomes.gaveUp).toBeGreaterThan(0)
}, 60_000)
