/**
 * backgroundClock: timers that run in a dedicated Worker, for auto-renewal
 * in hidden tabs. (Pages under vitest's Playwright provider always count as
 * visible; the renewal in a really hidden, throttled tab is tested in
 * lifecycle.test.ts.)
 */
import { describe, expect, it } from 'vitest'
import { Client } from 'zaris'
import { backgroundClock, indexedDbAdapter } from 'zaris/indexeddb'

describe('backgroundClock', () => {
  it('runs its timers in a worker, in deadline order, and clearTimeout cancels', async () => {
    const clock = backgroundClock()
    try {
      expect(clock.inWorker).toBe(true)
      const fired: string[] = []
      const start = clock.now()
      await new Promise<void>((resolve) => {
        clock.setTimeout(() => fired.push('b'), 40)
        const cancelled = clock.setTimeout(() => fired.push('never'), 20)
        clock.setTimeout(() => fired.push('a'), 10)
        clock.clearTimeout(cancelled)
        clock.setTimeout(() => resolve(), 80)
      })
      expect(fired).toEqual(['a', 'b'])
      expect(clock.now() - start).toBeGreaterThanOrEqual(79)
    } finally {
      clock.close()
    }
  })

  it('keeps an auto-renewed lock past several TTLs', async () => {
    const clock = backgroundClock()
    const namespace = `bg-${Math.random().toString(36).slice(2)}`
    const holder = new Client(indexedDbAdapter({ namespace }), { clock, id: 'holder' })
    const other = new Client(indexedDbAdapter({ namespace }), { id: 'other' })
    try {
      const lock = (await holder.locks.acquire('lock:bg', { ttl: 300 }))!
      await new Promise((r) => setTimeout(r, 1_200))
      expect(lock.held).toBe(true)
      expect(lock.signal.aborted).toBe(false)
      expect(await other.locks.acquire('lock:bg')).toBeNull()
      expect((await other.locks.holder('lock:bg'))?.token).toBe(lock.token)
    } finally {
      await holder.close()
      await other.close()
      clock.close()
      indexedDB.deleteDatabase(`zaris:${namespace}`)
    }
  })
})
