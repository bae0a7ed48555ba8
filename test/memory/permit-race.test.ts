/**
 * A semaphore's waiter that gives up while the store is handing it a permit
 * (issue 31's race, for permits): its take is parked with its other ways (a
 * take of any slot); its caller aborts in the same tick as a holder's
 * release of a slot that is not its own planned one, before it or after it,
 * a few microtasks or a macrotask apart. It must never end up holding: the
 * abort rejects its acquire, a permit granted just before is let go, and
 * once its place is gone (a macrotask after the abort) no way of its take
 * can go through. Every round's commits are judged by the lincheck checker.
 */
import { expect, test } from 'vitest'
import { Client, type Permit } from 'zaris'
import { LocalStore } from '../../src/adapters/kit/local-store'
import { localAdapter } from '../../src/adapters/kit/local-adapter'
import { slotPrefix } from '../../src/core/contract/reserved'
import { systemClock } from '../../src/core/time/clock'
import { MemoryHistory, recordingAdapter } from '../lincheck/recorder'
import { verifyHistory } from '../lincheck/verify'

const ROUNDS = 40

async function hops(n: number): Promise<void> {
  if (n < 0) return new Promise((r) => setTimeout(r, 0))
  for (let i = 0; i < n; i++) await Promise.resolve()
}

test(`${ROUNDS} rounds of a permit waiter giving up in the tick a permit is handed to it: it never ends up holding, the history is linearizable`, async () => {
  const store = new LocalStore({ clock: systemClock })
  const history = new MemoryHistory(() => performance.now())
  const clientOf = (id: string) => new Client(recordingAdapter(localAdapter('memory', store), history, id), { id })
  const h = clientOf('h')
  const w = clientOf('w')
  const slot1 = slotPrefix('sem') + '1'
  const outcomes = { gaveUp: 0, wonThenLetGo: 0, wonFirst: 0 }
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const [p0, p1] = (await Promise.all([0, 1].map(() => h.semaphores.acquire('sem', { limit: 2, ttl: 20_000 })))) as [Permit, Permit]
      const stop = new AbortController()
      const waiting = w.semaphores.acquire('sem', { limit: 2, ttl: 20_000, wait: 10_000, signal: stop.signal }).then(
        (permit) => ({ permit, beforeAbort: !stop.signal.aborted }),
        (err: unknown) => ({ err }),
      )
      while (store.parked !== 1) await hops(-1)
      const before = round % 2 === 0
      const gap = [0, 1, 3, -1][round % 4]!
      let granted = false
      if (before) {
        stop.abort(new Error('gave up'))
        await hops(gap)
        granted = (await p1!.release()) && store.get(slot1)?.owner === 'w'
        // A macrotask after the abort its place is gone: no way of its take may go through then.
        if (gap < 0) expect(granted, `round ${round}: granted a permit after its place was gone`).toBe(false)
      } else {
        const releasing = p1!.release()
        granted = store.get(slot1)?.owner === 'w'
        expect(granted, `round ${round}: the release did not hand the permit over in its own step`).toBe(true)
        await hops(gap)
        stop.abort(new Error('gave up'))
        await releasing
      }
      const r = await waiting
      if ('permit' in r) {
        expect(r.beforeAbort, `round ${round}: the acquire that gave up resolved a permit`).toBe(true)
        await r.permit!.release()
        outcomes.wonFirst++
      } else {
        for (let i = 0; i < 50 && store.get(slot1) !== undefined; i++) await hops(-1)
        expect(store.get(slot1), `round ${round}: the waiter that gave up still holds a permit`).toBeUndefined()
        if (granted) outcomes.wonThenLetGo++
        else outcomes.gaveUp++
      }
      expect(store.list('').entries.filter((e) => e.owner === 'w')).toEqual([])
      expect(store.parked).toBe(0)
      await p0!.release()
    }
  } finally {
    await Promise.all([h.close(), w.close()])
  }
  const verdict = verifyHistory(history.events)
  if (!verdict.ok) throw new Error(verdict.report)
  expect(outcomes.wonThenLetGo).toBeGreaterThan(0)
  expect(outcomes.gaveUp).toBeGreaterThan(0)
}, 60_000)
