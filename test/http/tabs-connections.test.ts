/**
 * Tabs of one origin share the browser's six HTTP/1.1 connections to a
 * node (Chromium counts them per host for the whole profile, not per page).
 * Each page's client keeps one for its watch stream; a wait must not keep
 * another. Real Chromium tabs on a real node process: four tabs wait for a
 * held lock, the first in line with its take parked at the node, and a
 * fifth tab's requests are still answered at once — not after the waits at
 * the node end (a parked take held its POST's connection for a quarter of
 * its TTL, 15 s here, and four of them and four streams filled the six; a
 * page's parked take is now answered on its stream). The waiters are then
 * served in the order they came.
 */
import { expect, it } from 'vitest'
import type { Page } from 'playwright'
import { connect } from 'zaris'
import { openHarnessTab } from '../browser-harness/server'
import { useHarnessWithNode } from '../browser-harness/with-node'

const env = useHarnessWithNode()

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** In `page`: a client `id` that watches `presence:` (as a page's panels do) and waits for lock:w (TTL 60 s); records when it got the lock. */
function waitIn(page: Page, port: number, store: string, id: string): Promise<void> {
  return page.evaluate(
    async ({ port, store, id }) => {
      const c = await window.zaris.connect(`zaris://127.0.0.1:${port}/${store}`, { id })
      window.kept.client = c
      await c.adapter.watch('presence:', { event: () => {}, error: () => {} })
      void c.locks.acquire('lock:w', { ttl: 60_000, wait: 60_000 }).then((lock) => {
        window.kept.got = Date.now()
        return lock?.release()
      })
    },
    { port, store, id },
  )
}

it('four tabs waiting on a node leave a fifth tab its requests: answered at once, not after their waits; the waiters are served in line order', async () => {
  const store = `tabs-${Math.random().toString(36).slice(2, 10)}`
  const observer = await connect(`zaris://127.0.0.1:${env.node.port}/${store}`, { id: 'observer' })
  const held = (await observer.locks.acquire('lock:w', { ttl: 60_000 }))!
  const ctx = await env.harness.browser.newContext()
  try {
    const waiters: Page[] = []
    for (let i = 0; i < 4; i++) {
      const page = await openHarnessTab(ctx, env.harness.url)
      await waitIn(page, env.node.port, store, `waiter${i}`)
      waiters.push(page)
      // In line before the next one comes, so the line's order is the tabs' order.
      while ((await observer.adapter.list('\u0001q')).entries.length < i + 1) await sleep(10)
    }
    await sleep(500) // every wait under way at the node
    // The first in line waits at the node, as a Node client's take does; its outcome will come on its stream.
    const parked = /^zaris_commits_parked (\d+)$/m.exec(await (await fetch(`${env.node.url}/metrics`)).text())?.[1]
    expect(Number(parked)).toBeGreaterThanOrEqual(1)
    const fifth = await openHarnessTab(ctx, env.harness.url)
    const took = await fifth.evaluate(
      async ({ port, store }) => {
        const at = Date.now()
        const c = await window.zaris.connect(`zaris://127.0.0.1:${port}/${store}`, { id: 'fifth' })
        await c.put('note', 'hello')
        const value = (await c.get('note'))?.value
        await c.close()
        return { ms: Date.now() - at, value }
      },
      { port: env.node.port, store },
    )
    console.log(`a fifth tab's connect + put + get with four tabs waiting: ${took.ms} ms`)
    expect(took.value).toBe('hello')
    // The waits last 15 s at the node before they go again: 5 s tells "at once" from "after them".
    expect(took.ms).toBeLessThan(5_000)
    await held.release()
    const got: number[] = []
    for (const page of waiters) {
      await page.waitForFunction(() => window.kept.got !== undefined, undefined, { timeout: 20_000, polling: 20 })
      got.push(await page.evaluate(() => window.kept.got as number))
    }
    expect(got).toEqual([...got].sort((a, b) => a - b))
  } finally {
    await ctx.close()
    await observer.close()
  }
}, 90_000)
