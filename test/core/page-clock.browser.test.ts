/**
 * The page clock (src/core/time/page-clock.ts): timers that run in a dedicated Worker, for auto-renewal
 * in hidden tabs. (Pages under vitest's Playwright provider always count as
 * visible; the renewal in a really hidden, throttled tab is tested in
 * lifecycle.test.ts. Here the page is made to look hidden by shadowing
 * `document.visibilityState`.)
 */
import { describe, expect, it } from 'vitest'
import { backgroundClock, Client, pageBackgroundClock } from 'zaris'
import { indexedDbAdapter } from 'zaris/indexeddb'
import { memoryAdapter } from 'zaris/memory'

/** Makes the page look hidden (or visible again) to the clock, and says so with the event. */
function lookHidden(hidden: boolean): void {
  if (hidden) Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true })
  else delete (document as unknown as { visibilityState?: string }).visibilityState
  document.dispatchEvent(new Event('visibilitychange'))
}

/** Counts the messages pages post to workers while `fn` runs (the worker still gets them). */
async function countingWorkerMessages<T>(fn: (count: () => number) => Promise<T>): Promise<T> {
  const original = Worker.prototype.postMessage
  let n = 0
  Worker.prototype.postMessage = function (this: Worker, ...args: Parameters<Worker['postMessage']>) {
    n++
    return original.apply(this, args as [unknown, StructuredSerializeOptions])
  } as Worker['postMessage']
  try {
    return await fn(() => n)
  } finally {
    Worker.prototype.postMessage = original
  }
}

/** Timers at 40 ms ('b'), 20 ms (cleared) and 10 ms ('a'): what fired by 80 ms, in order. */
async function orderedTimers(clock: ReturnType<typeof backgroundClock>): Promise<string[]> {
  const fired: string[] = []
  await new Promise<void>((resolve) => {
    clock.setTimeout(() => fired.push('b'), 40)
    const cancelled = clock.setTimeout(() => fired.push('never'), 20)
    clock.setTimeout(() => fired.push('a'), 10)
    clock.clearTimeout(cancelled)
    clock.setTimeout(() => resolve(), 80)
  })
  return fired
}

describe('backgroundClock', () => {
  it('while the page is visible, runs its timers on the page (no worker message), in deadline order; clearTimeout cancels', async () => {
    const clock = backgroundClock()
    try {
      await countingWorkerMessages(async (count) => {
        expect(await orderedTimers(clock)).toEqual(['a', 'b'])
        expect(count()).toBe(0)
      })
    } finally {
      clock.close()
    }
  })

  it('when the page goes hidden, moves pending timers to the worker with the time they have left; timers set while hidden run there too', async () => {
    const clock = backgroundClock()
    try {
      await countingWorkerMessages(async (count) => {
        const fired: Array<[string, number]> = []
        const start = clock.now()
        const done = new Promise<void>((resolve) => {
          clock.setTimeout(() => fired.push(['set visible, 60 ms', clock.now() - start]), 60)
          const cancelled = clock.setTimeout(() => fired.push(['never', 0]), 70)
          lookHidden(true)
          expect(count()).toBe(2) // both moved
          clock.clearTimeout(cancelled)
          clock.setTimeout(() => fired.push(['set hidden, 20 ms', clock.now() - start]), 20)
          clock.setTimeout(() => resolve(), 100)
        })
        await done
        expect(fired.map(([name]) => name)).toEqual(['set hidden, 20 ms', 'set visible, 60 ms'])
        expect(fired[1]![1]).toBeGreaterThanOrEqual(59)
        // 2 moved + 1 clear + 2 set while hidden
        expect(count()).toBe(5)
      })
    } finally {
      lookHidden(false)
      clock.close()
    }
  })

  it('runs its timers in a worker, in deadline order, and clearTimeout cancels', async () => {
    const clock = backgroundClock()
    lookHidden(true)
    try {
      expect(clock.inWorker).toBe(true)
      const start = clock.now()
      expect(await orderedTimers(clock)).toEqual(['a', 'b'])
      expect(clock.now() - start).toBeGreaterThanOrEqual(79)
    } finally {
      lookHidden(false)
      clock.close()
    }
  })

  it('keeps an auto-renewed lock past several TTLs', async () => {
    const clock = backgroundClock()
    const namespace = `bg-${Math.random().toString(36).slice(2)}`
    const holder = new Client(indexedDbAdapter({ namespace }), { clock, id: 'holder' })
    const other = new Client(indexedDbAdapter({ namespace }), { id: 'other' })
    try {
      // 1 s, not less: a renewal is an IndexedDB transaction, and on a loaded
      // 2-core machine one came ~200 ms late and lost a 300 ms lock (clean-clone
      // run of 2026-12-01); this test is about the worker's timers, not latency.
      const lock = (await holder.locks.acquire('lock:bg', { ttl: 1_000 }))!
      await new Promise((r) => setTimeout(r, 3_500))
      expect(lock.held, `the hold ended: ${String((lock.signal.reason as Error | undefined)?.message)}`).toBe(true)
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

  it('is what a client in a page counts on by default, whatever the store: hidden, a memory client renews from the worker', async () => {
    const client = new Client(memoryAdapter({ namespace: `page-clock-${Math.random().toString(36).slice(2)}` }), { id: 'holder' })
    try {
      expect(pageBackgroundClock().inWorker).toBe(true)
      await countingWorkerMessages(async (count) => {
        lookHidden(true)
        const lock = (await client.locks.acquire('lock:page-clock', { ttl: 300 }))!
        const token = lock.token
        await new Promise((r) => setTimeout(r, 700))
        expect(lock.held).toBe(true)
        expect((await client.locks.holder('lock:page-clock'))?.token).toBe(token)
        // Every renewal and the hold's deadline were timers set while hidden: each one a message to the page clock's worker.
        expect(count()).toBeGreaterThanOrEqual(4)
      })
    } finally {
      lookHidden(false)
      await client.close()
    }
  })
})
