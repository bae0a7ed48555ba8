/**
 * The `pagehide` announcement across real tabs: a page being discarded says
 * that its clients are gone, and a waiter in another tab takes over at once
 * instead of waiting for the browser to free the dead tab's Web Lock. The
 * holder tabs here dispatch a synthetic `pagehide` and stay alive, so their
 * Web Locks stay held: whatever the waiter does, the announcement made it.
 */
import { describe, expect, it } from 'vitest'
import type { Page } from 'playwright'
import { useHarness } from '../browser-harness/recorded-tabs'

const harness = useHarness()

async function withTabs(n: number, fn: (tabs: Page[], store: string) => Promise<void>): Promise<void> {
  const ctx = await harness.browser.newContext()
  try {
    const tabs: Page[] = []
    for (let i = 0; i < n; i++) {
      const page = await ctx.newPage()
      page.on('pageerror', (err) => console.error('page error:', err))
      await page.goto(harness.url)
      await page.waitForFunction(() => window.harnessReady === true, undefined, { polling: 50 })
      tabs.push(page)
    }
    await fn(tabs, `announce-${Math.random().toString(36).slice(2, 10)}`)
  } finally {
    await ctx.close()
  }
}

/**
 * Connects a client with `id` in `tab` and takes `key` with it; resolves the
 * token. `gateless`: as a lock of several keys (of one key here), which takes
 * no gate (a page that goes lets its gates go, and the next in line takes the
 * key over at once, whatever liveness says of the id: test/indexeddb/gate.browser.test.ts).
 */
function hold(tab: Page, store: string, id: string, key: string, gateless = false): Promise<number> {
  return tab.evaluate(
    async ({ store, id, key, gateless }) => {
      const c = await window.zaris.connect(`zaris://idb/${store}`, { id })
      const lock = gateless ? (await c.locks.acquire([key], { ttl: 30_000 }))?.locks[0] : await c.locks.acquire(key, { ttl: 30_000 })
      if (!lock) throw new Error(`${key} is taken`)
      window.kept[key] = lock
      window.kept[`client:${id}`] = c
      return lock.token
    },
    { store, id, key, gateless },
  )
}

/** A waiting acquire in `tab`; resolves the token it got, or null once `wait` ms ran out. */
function waitFor(tab: Page, store: string, key: string, wait: number): Promise<number | null> {
  return tab.evaluate(
    async ({ store, key, wait }) => {
      const kept = window.kept as { waiter?: Promise<import('zaris').Client> }
      kept.waiter ??= window.zaris.connect(`zaris://idb/${store}`, { id: 'waiter' })
      const lock = await (await kept.waiter).locks.acquire(key, { ttl: 30_000, wait })
      return lock?.token ?? null
    },
    { store, key, wait },
  )
}

function pagehide(tab: Page, persisted: boolean): Promise<void> {
  return tab.evaluate((persisted) => {
    dispatchEvent(new PageTransitionEvent('pagehide', { persisted }))
  }, persisted)
}

/** True while a client of `id` holds its liveness Web Lock (its tab is alive). */
function registered(tab: Page, store: string, id: string): Promise<boolean> {
  return tab.evaluate(
    async ({ store, id }) => {
      const state = await navigator.locks.query()
      return state.held?.some((l) => l.name === `zaris:${store}:owner:${id}`) ?? false
    },
    { store, id },
  )
}

/**
 * Counts the IndexedDB transactions `tab` opens from now on. A closing tab
 * must open none: the browser stops running its tasks, so one it opens never
 * finishes, and IndexedDB holds every other tab's writes behind it until the
 * tab is torn down (bench/FINDINGS.md §18).
 */
function countTransactions(tab: Page): Promise<void> {
  return tab.evaluate(() => {
    const counts = { all: 0, readwrite: 0 }
    window.kept.transactions = counts
    const open = IDBDatabase.prototype.transaction
    IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<typeof open>) {
      counts.all++
      if (args[1] === 'readwrite') counts.readwrite++
      return open.apply(this, args)
    } as typeof open
  })
}

function transactions(tab: Page): Promise<{ all: number; readwrite: number }> {
  return tab.evaluate(() => window.kept.transactions as { all: number; readwrite: number })
}

/** What a closing tab sees after `pagehide`: the document goes hidden. */
function goHidden(tab: Page): Promise<void> {
  return tab.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' })
    document.dispatchEvent(new Event('visibilitychange'))
  })
}

describe('indexeddb: a discarded page announces that its clients are gone', () => {
  it('the announcing page itself does nothing about it: its reaper (which follows its own holder too) writes nothing', async () => {
    await withTabs(2, async ([holder, other], store) => {
      await hold(holder!, store, 'holder', 'lock:a')
      // A waiter elsewhere, so the announcement has someone to tell.
      const waiting = waitFor(other!, store, 'lock:a', 20_000)
      await new Promise((r) => setTimeout(r, 300)) // the holder's reaper has looked its own client up and listens
      await countTransactions(holder!)
      await pagehide(holder!, false)
      expect(await waiting).not.toBeNull()
      await new Promise((r) => setTimeout(r, 200))
      expect((await transactions(holder!)).readwrite).toBe(0)
    })
  }, 60_000)

  it('going hidden is no wake: the page opens no transaction to catch up (a closing tab goes hidden after pagehide)', async () => {
    await withTabs(1, async ([tab], store) => {
      await hold(tab!, store, 'holder', 'lock:a')
      await new Promise((r) => setTimeout(r, 300))
      await countTransactions(tab!)
      await goHidden(tab!)
      await new Promise((r) => setTimeout(r, 300))
      expect(await transactions(tab!)).toEqual({ all: 0, readwrite: 0 })
      // Shown again, it does catch up (a read of the log, a sweep).
      await tab!.evaluate(() => {
        Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'visible' })
        document.dispatchEvent(new Event('visibilitychange'))
      })
      await expect.poll(async () => (await transactions(tab!)).all).toBeGreaterThan(0)
    })
  }, 60_000)

  it('pagehide (not persisted) in the holder tab: a waiter takes over at once, though the Web Lock is still held', async () => {
    await withTabs(2, async ([holder, waiter], store) => {
      const token = await hold(holder!, store, 'holder', 'lock:a')
      const waiting = waitFor(waiter!, store, 'lock:a', 20_000)
      await new Promise((r) => setTimeout(r, 200)) // the waiter has tried once and is waiting
      await pagehide(holder!, false)
      const taken = await waiting
      expect(taken).not.toBeNull()
      expect(taken!).toBeGreaterThan(token)
      // The Web Lock backstop never fired: the holder's tab (and its liveness lock) is still there.
      expect(await registered(waiter!, store, 'holder')).toBe(true)
    })
  }, 60_000)

  it('pagehide with persisted (back/forward cache) announces nothing: the waiter keeps waiting', async () => {
    await withTabs(2, async ([holder, waiter], store) => {
      await hold(holder!, store, 'holder', 'lock:a')
      const waiting = waitFor(waiter!, store, 'lock:a', 1_500)
      await new Promise((r) => setTimeout(r, 200))
      await pagehide(holder!, true)
      expect(await waiting).toBeNull()
    })
  }, 60_000)

  it('an id alive in another tab (a twin) is not taken for dead when one of its tabs announces', async () => {
    await withTabs(3, async ([holder, twin, waiter], store) => {
      // The twin first: had it registered only after the lock was seen, every tab
      // would know it did not write the lock, and the lock would be ended for the
      // announcing tab (src/adapters/indexeddb/reaper.ts; test/indexeddb/reaper.browser.test.ts).
      await twin!.evaluate(async (store) => {
        window.kept.twin = await window.zaris.connect(`zaris://idb/${store}`, { id: 'same' })
      }, store)
      // Held without a gate: this is about what the announcement of an id may end.
      await hold(holder!, store, 'same', 'lock:a', true)
      const waiting = waitFor(waiter!, store, 'lock:a', 1_500)
      await new Promise((r) => setTimeout(r, 200))
      await pagehide(holder!, false)
      expect(await waiting).toBeNull()
    })
  }, 60_000)

  it('an announcement heard before the waiter saw the entry counts; a later client of the same id does not', async () => {
    await withTabs(3, async ([holder, reused, waiter], store) => {
      const token = await hold(holder!, store, 'h', 'lock:a')
      // The waiter's tab hears it before it ever reads lock:a.
      await waiter!.evaluate(async (store) => {
        window.kept.waiter = window.zaris.connect(`zaris://idb/${store}`, { id: 'waiter' })
        await window.kept.waiter
      }, store)
      await pagehide(holder!, false)
      await new Promise((r) => setTimeout(r, 200))
      const taken = await waitFor(waiter!, store, 'lock:a', 20_000)
      expect(taken).not.toBeNull()
      expect(taken!).toBeGreaterThan(token)
      // A new client reusing the id (as after a reload with a fixed id) is alive: the old announcement must not kill it.
      await hold(reused!, store, 'h', 'lock:b')
      expect(await waitFor(waiter!, store, 'lock:b', 1_500)).toBeNull()
    })
  }, 60_000)

  it('closing the holder tab for real: the waiter takes over (printed: how long before the Web Lock was free)', async () => {
    await withTabs(2, async ([holder, waiter], store) => {
      const token = await hold(holder!, store, 'holder', 'lock:a')
      // Stamp when the closed tab's liveness lock is granted to someone else, and when the waiter holds.
      await waiter!.evaluate(
        async ({ store }) => {
          window.kept.free = new Promise<number>((resolve) => {
            void navigator.locks.request(`zaris:${store}:owner:holder`, () => resolve(performance.now()))
          })
        },
        { store },
      )
      const result = waiter!.evaluate(
        async ({ store }) => {
          const c = await window.zaris.connect(`zaris://idb/${store}`, { id: 'waiter' })
          const lock = await c.locks.acquire('lock:a', { ttl: 30_000, wait: 20_000 })
          return { at: performance.now(), token: lock?.token ?? null }
        },
        { store },
      )
      await new Promise((r) => setTimeout(r, 300))
      await holder!.close()
      const r = await result
      const free = await waiter!.evaluate(() => window.kept.free as Promise<number>)
      expect(r.token).not.toBeNull()
      expect(r.token!).toBeGreaterThan(token)
      console.log(`holder tab closed: waiter held ${(free - r.at).toFixed(1)} ms before the Web Lock was free`)
    })
  }, 60_000)
})
