/**
 * Liveness and the reaper are a chunk of their own (src/adapters/indexeddb/alive.ts),
 * loaded when a store is made. Real Chromium tabs (test/browser-harness), with
 * the chunk's request held back or failed by the network (Playwright's
 * `page.route`): `connect` resolves only once it runs, and a hold is never
 * written before its client is registered, so a tab closed right after its
 * first hold still frees it at once for the others. A chunk that fails to load
 * fails `connect`, or (a store made with `indexedDbAdapter`) the hold, with an
 * error that says so, writes nothing, and the next try loads it again
 * (Chromium fetches a module whose load failed again on the next `import()`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page, Route } from 'playwright'
import { openHarnessTab, startHarness, type Harness } from '../browser-harness/server'

let harness: Harness
beforeAll(async () => {
  harness = await startHarness()
}, 60_000)
afterAll(async () => {
  await harness?.close()
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const ns = () => `alive-${Math.random().toString(36).slice(2, 10)}`
const isAliveChunk = (url: URL) => url.pathname.endsWith('/adapters/indexeddb/alive.ts')

function open(ctx: BrowserContext, route?: (route: Route) => Promise<void>): Promise<Page> {
  return openHarnessTab(ctx, harness.url, route && ((page) => page.route(isAliveChunk, route)))
}

/** In `page`: a client `id` as window.kept.client and, with `watch`, every event of the store in window.kept.events. */
async function client(page: Page, store: string, id: string, watch = false): Promise<void> {
  await page.evaluate(
    async ({ store, id, watch }) => {
      window.kept.client = await window.zaris.connect(`zaris://idb/${store}`, { id })
      if (!watch) return
      const raw = window.zarisIndexedDb.indexedDbAdapter({ namespace: store })
      const events: Array<{ type: string; key: string }> = []
      window.kept.events = events
      await raw.watch('', { event: (ev) => events.push({ type: ev.type, key: ev.key }), error: () => {} })
    },
    { store, id, watch },
  )
}

/** What `other` sees of `lock:a` and of the holder tab's registration lock. */
async function seen(other: Page, store: string): Promise<{ holder: string | undefined; registered: boolean }> {
  return other.evaluate(async (store) => {
    const c = window.kept.client as import('zaris').Client
    const state = await navigator.locks.query()
    return {
      holder: (await c.locks.holder('lock:a'))?.owner,
      registered: (state.held ?? []).some((l) => l.name === `zaris:${store}:owner:holder`),
    }
  }, store)
}

describe('the liveness chunk (IndexedDB, real tabs, the chunk held back or failed by the network)', () => {
  it('held back: connect and the first hold wait for it; once written, closing the tab frees the hold at once', async () => {
    const ctx = await harness.browser.newContext()
    try {
      const store = ns()
      let requested!: () => void
      const asked = new Promise<void>((r) => (requested = r))
      let release!: () => void
      const gate = new Promise<void>((r) => (release = r))
      const holder = await open(ctx, async (route) => {
        requested()
        await gate
        await route.continue()
      })
      const other = await open(ctx)
      await client(other, store, 'other', true)
      await holder.evaluate((store) => {
        const connecting = window.zaris.connect(`zaris://idb/${store}`, { id: 'holder' }).then((c) => (window.kept.client = c))
        window.kept.taking = connecting.then((c) => c.locks.acquire('lock:a', { ttl: 30_000 })).then((l) => (window.kept.lock = l))
      }, store)
      await asked
      await sleep(300) // time the connect and the hold would need, were they not held back
      expect(await seen(other, store)).toEqual({ holder: undefined, registered: false })
      expect(await holder.evaluate(() => [window.kept.client, window.kept.lock])).toEqual([undefined, undefined])

      release()
      expect(await holder.evaluate(async () => ((await window.kept.taking) as { token: number } | null)?.token)).toBeGreaterThan(0)
      expect(await seen(other, store)).toEqual({ holder: 'holder', registered: true })
      const at = Date.now()
      await holder.close({ runBeforeUnload: true })
      await other.waitForFunction(
        () => (window.kept.events as Array<{ type: string; key: string }>).some((e) => e.key === 'lock:a' && e.type === 'expire'),
        undefined,
        { timeout: 10_000, polling: 5 },
      )
      const took = Date.now() - at
      console.log(`liveness chunk held back until the first hold asked: the closed tab's lock ended ${took} ms after it closed (TTL 30 000 ms)`)
      expect(took, 'ended when the tab went, not at the TTL').toBeLessThan(5_000)
      const got = await other.evaluate(async () => (await (window.kept.client as import('zaris').Client).locks.acquire('lock:a', { ttl: 30_000 })) !== null)
      expect(got).toBe(true)
    } finally {
      await ctx.close()
    }
  }, 60_000)

  it('failed: connect, or the hold of a store made with indexedDbAdapter, fails with UNAVAILABLE naming liveness, and writes nothing; the next try loads it and holds', async () => {
    const ctx = await harness.browser.newContext()
    try {
      const store = ns()
      let failing = true
      let failures = 0
      const holder = await open(ctx, async (route) => {
        if (!failing) return route.continue()
        failures++
        await route.abort('internetdisconnected')
      })
      const other = await open(ctx)
      await client(other, store, 'other', true)
      const tries = await holder.evaluate(async (store) => {
        const failure = async (fn: () => Promise<unknown>) => {
          try {
            return { ok: await fn() }
          } catch (err) {
            const e = err as { name: string; code?: string; message: string }
            return { name: e.name, code: e.code, message: e.message }
          }
        }
        const connected = await failure(() => window.zaris.connect(`zaris://idb/${store}`, { id: 'holder' }).then(() => 'connected'))
        const c = new window.zaris.Client(window.zarisIndexedDb.indexedDbAdapter({ namespace: store }), { id: 'holder' })
        window.kept.client = c
        const held = await failure(async () => (await c.locks.acquire('lock:a', { ttl: 30_000 })) !== null)
        return [connected, held]
      }, store)
      for (const t of tries) {
        expect(t).toMatchObject({ name: 'UnavailableError', code: 'UNAVAILABLE' })
        expect((t as { message: string }).message).toMatch(/liveness/)
      }
      expect(await seen(other, store)).toEqual({ holder: undefined, registered: false })
      expect(failures).toBeGreaterThan(0)

      failing = false
      const second = await holder.evaluate(async () => {
        const c = window.kept.client as import('zaris').Client
        return (await c.locks.acquire('lock:a', { ttl: 30_000 }))?.token
      })
      expect(second).toBeGreaterThan(0)
      expect(await seen(other, store)).toEqual({ holder: 'holder', registered: true })
      await holder.close({ runBeforeUnload: true })
      await other.waitForFunction(
        () => (window.kept.events as Array<{ type: string; key: string }>).some((e) => e.key === 'lock:a' && e.type === 'expire'),
        undefined,
        { timeout: 10_000, polling: 5 },
      )
    } finally {
      await ctx.close()
    }
  }, 60_000)
})
