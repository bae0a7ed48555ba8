/**
 * A tab that goes away frees what it held at once, for every tab: real
 * Chromium tabs (test/browser-harness) on one IndexedDB store. The holder
 * tab holds a lock, a lease, an election term and a place in a wait line;
 * it is closed (its `pagehide` says so), crashed (`Page.crash`: nothing is
 * said, the browser frees its Web Locks) or closed from the browser side
 * (`Target.closeTarget`). The two other tabs both reap; a third-party watcher
 * must see each entry end once, as an `expire`, and a plain acquire, `holder()`
 * and `list` must see it gone. A tab that is only hung keeps its entries.
 * Figures (close -> every entry ended) are printed; the DESIGN's target is 100 ms.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright'
import { openHarnessTab, startHarness, type Harness } from '../browser-harness/server'

let harness: Harness
beforeAll(async () => {
  harness = await startHarness()
}, 60_000)
afterAll(async () => {
  await harness?.close()
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const ns = () => `reap-${Math.random().toString(36).slice(2, 10)}`

const open = (ctx: BrowserContext): Promise<Page> => openHarnessTab(ctx, harness.url)

/** In `page`: a client `id` (kept as window.kept.client) and, with `watch`, a raw watch of every key stamping each event. */
async function client(page: Page, store: string, id: string, watch = false): Promise<void> {
  await page.evaluate(
    async ({ store, id, watch }) => {
      window.kept.client = await window.zaris.connect(`zaris://idb/${store}`, { id })
      if (!watch) return
      const raw = window.zarisIndexedDb.indexedDbAdapter({ namespace: store })
      const events: Array<{ type: string; key: string; revision: number; at: number }> = []
      window.kept.events = events
      await raw.watch('', { event: (ev) => events.push({ type: ev.type, key: ev.key, revision: ev.revision, at: Date.now() }), error: () => {} })
    },
    { store, id, watch },
  )
}

type Fault = 'close' | 'crash' | 'closeTarget'

async function inflict(fault: Fault, ctx: BrowserContext, page: Page): Promise<void> {
  if (fault === 'close') return page.close({ runBeforeUnload: true })
  const cdp = await ctx.newCDPSession(page)
  if (fault === 'crash') {
    const crashed = new Promise<void>((resolve) => page.once('crash', () => resolve()))
    void cdp.send('Page.crash').catch(() => {})
    return crashed
  }
  const { targetInfo } = await cdp.send('Target.getTargetInfo')
  const browser = await harness.browser.newBrowserCDPSession()
  await browser.send('Target.closeTarget', { targetId: targetInfo.targetId })
  await browser.detach()
}

describe('a tab that goes away frees its entries for every tab (IndexedDB, real tabs)', () => {
  for (const fault of ['close', 'crash', 'closeTarget'] as const) {
    it(`${fault}: its lock, lease, term and wait-line place end once each, as expiries; a plain acquire, holder() and list see them gone`, async () => {
      const ctx = await harness.browser.newContext()
      try {
        const store = ns()
        const [holder, other, watcher] = [await open(ctx), await open(ctx), await open(ctx)]
        await client(other, store, 'other')
        await client(watcher, store, 'watcher', true)
        await client(holder, store, 'holder')
        await other.evaluate(async () => {
          window.kept.w = await (window.kept.client as import('zaris').Client).locks.acquire('lock:w', { ttl: 30_000 })
        })
        const queue = await holder.evaluate(async () => {
          const c = window.kept.client as import('zaris').Client
          const ttl = 30_000
          window.kept.lock = await c.locks.acquire('lock:a', { ttl })
          window.kept.lease = await c.leases.grant('presence:holder', { ttl, value: 'here' })
          window.kept.term = await c.election('leader', { ttl }).campaign()
          void c.locks.acquire('lock:w', { ttl, wait: Infinity }).catch(() => {})
          for (;;) {
            const place = (await c.adapter.list('\u0001q')).entries.find((e) => e.owner === 'holder')
            if (place) return place.key
            await new Promise((r) => setTimeout(r, 10))
          }
        })
        const keys = ['lock:a', 'presence:holder', 'leader', queue]
        await sleep(200) // every tab has seen them
        // When the browser frees the gone tab's liveness Web Lock: no reaper can know sooner without an announcement.
        await watcher.evaluate((name) => {
          window.kept.free = navigator.locks.request(name, { mode: 'exclusive' }, async () => Date.now())
        }, `zaris:${store}:owner:holder`)
        const at = Date.now()
        await inflict(fault, ctx, holder)
        await watcher.waitForFunction(
          (keys) => keys.every((k) => (window.kept.events as Array<{ type: string; key: string }>).some((e) => e.key === k && e.type === 'expire')),
          keys,
          { timeout: 10_000, polling: 5 },
        )
        const events = await watcher.evaluate(() => window.kept.events as Array<{ type: string; key: string; revision: number; at: number }>)
        const ends = events.filter((e) => keys.includes(e.key) && e.type !== 'put')
        // Both surviving tabs reap; each entry still ends once, with a revision of its own.
        expect(ends.map((e) => e.type)).toEqual(['expire', 'expire', 'expire', 'expire'])
        expect(new Set(ends.map((e) => e.revision)).size).toBe(4)
        const took = Math.max(...ends.map((e) => e.at)) - at
        const free = (await watcher.evaluate(() => window.kept.free as Promise<number>)) - at
        console.log(`IndexedDB, holder tab ${fault === 'close' ? 'closed' : fault === 'crash' ? 'crashed' : 'closed by Target.closeTarget'}: its 4 entries ended after ${took} ms; its Web Lock was free after ${free} ms (TTL 30 000 ms)`)
        expect(took, 'ended when the tab went, not at the TTL').toBeLessThan(5_000)
        const seen = await other.evaluate(async () => {
          const c = window.kept.client as import('zaris').Client
          const lock = await c.locks.acquire('lock:a', { ttl: 30_000 }) // a plain try
          return { holder: await c.locks.holder('leader'), list: (await c.list('presence:')).length, got: lock !== null, leader: await c.get('leader') }
        })
        expect(seen).toEqual({ holder: undefined, list: 0, got: true, leader: undefined })
      } finally {
        await ctx.close()
      }
    }, 60_000)
  }

  it('a hung tab (paused in the debugger) keeps its entries: alive is not gone', async () => {
    const ctx = await harness.browser.newContext()
    try {
      const store = ns()
      const [holder, other] = [await open(ctx), await open(ctx)]
      await client(other, store, 'other')
      await client(holder, store, 'holder')
      const token = await holder.evaluate(async () => {
        const lock = await (window.kept.client as import('zaris').Client).locks.acquire('lock:hung', { ttl: 30_000, autoRenew: false })
        setInterval(() => {
          if (window.kept.hang) debugger
        }, 20)
        return lock!.token
      })
      const cdp = await ctx.newCDPSession(holder)
      await cdp.send('Debugger.enable')
      const paused = new Promise<void>((resolve) => cdp.once('Debugger.paused', () => resolve()))
      await holder.evaluate(() => (window.kept.hang = true))
      await paused
      await sleep(1_000)
      const seen = await other.evaluate(async () => (await (window.kept.client as import('zaris').Client).locks.holder('lock:hung'))?.token)
      expect(seen).toBe(token)
      await cdp.send('Debugger.disable')
    } finally {
      await ctx.close()
    }
  }, 60_000)
})
