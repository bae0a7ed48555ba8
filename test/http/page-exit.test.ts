/**
 * A page on a zaris node frees what it holds when it goes away: real
 * Chromium tabs (test/browser-harness) on a real node process on another
 * origin (allowed with `--cors`). The page holds a lock, a lease and a place
 * in a wait line; it is closed (with and without beforeunload) or navigated
 * away; a Node client sees all three gone at once instead of after the
 * 30 s TTL. The release carries the release's check, so a lock taken over
 * since is untouched; and a page of an origin the node does not allow cannot
 * send it at all.
 */
import { describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright'
import { connect, type Client, type WatchEvent } from 'zaris'
import { openHarnessTab } from '../browser-harness/server'
import { useHarnessWithNode } from '../browser-harness/with-node'

const env = useHarnessWithNode()

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const ns = () => `exit-${Math.random().toString(36).slice(2, 10)}`

const open = (ctx: BrowserContext, base = env.harness.url): Promise<Page> => openHarnessTab(ctx, base)

/** A Node client on `store` with a watch of every key (wait-line keys included) through its adapter. */
async function observer(store: string): Promise<{ client: Client; events: Array<WatchEvent & { at: number }> }> {
  const client = await connect(`zaris://127.0.0.1:${env.node.port}/${store}`, { id: 'observer' })
  const events: Array<WatchEvent & { at: number }> = []
  await client.adapter.watch('', { event: (ev) => events.push({ ...ev, at: Date.now() }), error: () => {} })
  return { client, events }
}

/** A browser context and a Node observer on a fresh namespace for `fn`, both closed after. */
async function withStore(fn: (ctx: BrowserContext, store: string, client: Client, events: Array<WatchEvent & { at: number }>) => Promise<void>): Promise<void> {
  const ctx = await env.harness.browser.newContext()
  const store = ns()
  const { client, events } = await observer(store)
  try {
    await fn(ctx, store, client, events)
  } finally {
    await client.close()
    await ctx.close()
  }
}

/** Resolves once every key in `keys` has been deleted, with when the last was; throws after 10 s. */
async function deleted(events: Array<WatchEvent & { at: number }>, keys: string[]): Promise<number> {
  const deadline = Date.now() + 10_000
  while (!keys.every((k) => events.some((e) => e.key === k && e.type === 'delete'))) {
    if (Date.now() > deadline) throw new Error(`not released: ${JSON.stringify(events.map((e) => [e.type, e.key]))}`)
    await sleep(5)
  }
  return Math.max(...events.filter((e) => keys.includes(e.key) && e.type === 'delete').map((e) => e.at))
}

/** In `page`: a client that holds lock:a and presence:page and waits in line for lock:w (held elsewhere); resolves its wait-line key. */
function holdThings(page: Page, store: string): Promise<{ token: number; place: string }> {
  return page.evaluate(
    async ({ port, store }) => {
      const c = await window.zaris.connect(`zaris://127.0.0.1:${port}/${store}`, { id: 'page' })
      window.kept.client = c
      const lock = await c.locks.acquire('lock:a', { ttl: 30_000 })
      window.kept.lock = lock
      window.kept.lease = await c.leases.grant('presence:page', { ttl: 30_000, value: 'here' })
      void c.locks.acquire('lock:w', { ttl: 30_000, wait: Infinity }).catch(() => {})
      for (;;) {
        const place = (await c.adapter.list('\u0001q')).entries.find((e) => e.owner === 'page')
        if (place) return { token: lock!.token, place: place.key }
        await new Promise((r) => setTimeout(r, 10))
      }
    },
    { port: env.node.port, store },
  )
}

describe('a page on a zaris node releases on page exit (Chromium, keepalive)', () => {
  for (const how of ['close with beforeunload', 'close', 'navigate away'] as const) {
    it(`${how}: its lock, lease and wait-line place are released at once, not at the TTL`, () => withStore(async (ctx, store, client, events) => {
      const w = (await client.locks.acquire('lock:w', { ttl: 30_000 }))!
      const page = await open(ctx)
      const { place } = await holdThings(page, store)
      const keys = ['lock:a', 'presence:page', place]
      const at = Date.now()
      if (how === 'close with beforeunload') await page.close({ runBeforeUnload: true })
      else if (how === 'close') await page.close()
      else await page.goto('about:blank')
      const took = (await deleted(events, keys)) - at
      console.log(`zaris node, page ${how}: lock, lease and wait-line place released after ${took} ms (TTL 30 000 ms)`)
      expect(took).toBeLessThan(5_000)
      expect(await client.locks.holder('lock:a')).toBeUndefined()
      expect(await client.list('presence:')).toEqual([])
      expect(await client.locks.acquire('lock:a', { ttl: 30_000 })).not.toBeNull()
      await w.release()
    }), 60_000)
  }

  it('the release checks the life it ends: a lock taken over since stays with its new holder', () => withStore(async (ctx, store, client, events) => {
    const w = (await client.locks.acquire('lock:w', { ttl: 30_000 }))!
    const page = await open(ctx)
    const { token } = await holdThings(page, store)
    const stolen = (await client.locks.acquire('lock:a', { ttl: 30_000, steal: true }))!
    expect(stolen.token).toBeGreaterThan(token)
    await page.close({ runBeforeUnload: true })
    // The lease goes (still the page's), the lock stays (a new life).
    await deleted(events, ['presence:page'])
    await sleep(300)
    expect(events.filter((e) => e.key === 'lock:a' && e.type !== 'put')).toEqual([])
    expect((await client.locks.holder('lock:a'))?.token).toBe(stolen.token)
    expect(stolen.held).toBe(true)
    await w.release()
  }), 60_000)

  it('a page of an origin the node does not allow cannot release anything, keepalive or not', () => withStore(async (ctx, store, client) => {
    const lock = (await client.locks.acquire('lock:a', { ttl: 30_000 }))!
    // The same harness, reached as localhost: an origin not given with --cors.
    const hostile = await open(ctx, env.harness.url.replace('127.0.0.1', 'localhost'))
    const body = JSON.stringify({ checks: [{ key: 'lock:a', created: lock.token }], ops: [{ type: 'delete', key: 'lock:a' }] })
    const url = `http://127.0.0.1:${env.node.port}/v1/${store}/commit`
    const outcomes = await hostile.evaluate(
      async ({ url, body }) => {
        const tries = [
          { 'content-type': 'application/json' }, // needs a preflight, which the node refuses
          { 'content-type': 'text/plain' }, // no preflight: the node refuses the request itself
        ]
        return Promise.all(tries.map((headers) => fetch(url, { method: 'POST', keepalive: true, headers, body }).then((r) => `answered ${r.status}`, (e: Error) => `failed: ${e.name}`)))
      },
      { url, body },
    )
    await hostile.close({ runBeforeUnload: true })
    await sleep(300)
    expect(outcomes.every((o) => o.startsWith('failed'))).toBe(true) // CORS: the page learns nothing either
    expect((await client.locks.holder('lock:a'))?.token).toBe(lock.token)
    expect(lock.held).toBe(true)
    expect(await lock.release()).toBe(true)
  }), 60_000)
})
