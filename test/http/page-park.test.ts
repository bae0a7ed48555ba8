/**
 * A page's take parked at a node with its outcome due on the page's watch
 * stream (`answerOn`), in real Chromium on a real node process, through a
 * TCP proxy the test controls: the grant is made in the release's step
 * while every byte to the page vanishes, then the page's connections are
 * cut. The outcome never came on the stream; the page asks the node again
 * under the commit's request id, and holds with the token the node granted
 * (not after the grant's TTL, and not by a second take).
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { connect } from 'zaris'
import { openHarnessTab } from '../browser-harness/server'
import { useHarnessWithNode } from '../browser-harness/with-node'
import { FaultProxy } from '../faults/proxy'
import { nodeMetric, until as waitFor } from '../server/node-metrics'

const env = useHarnessWithNode()
let proxy: FaultProxy
beforeAll(async () => {
  proxy = await new FaultProxy(env.node.port).start()
})
afterAll(async () => {
  await proxy?.stop()
})

const metric = (name: string) => nodeMetric(env.node.url, name)
const until = (what: string, ok: () => Promise<boolean>) => waitFor(what, ok, 10_000, 20)

it('a grant whose answer on the stream is lost: the page asks again by request id and holds with the granted token, long before its TTL', async () => {
  const store = `page-park-${Math.random().toString(36).slice(2, 10)}`
  const observer = await connect(`zaris://127.0.0.1:${env.node.port}/${store}`, { id: 'observer' })
  const held = (await observer.locks.acquire('lock:p', { ttl: 60_000 }))!
  const ctx = await env.harness.browser.newContext()
  try {
    const page = await openHarnessTab(ctx, env.harness.url)
    await page.evaluate(
      async ({ port, store }) => {
        const c = await window.zaris.connect(`zaris://127.0.0.1:${port}/${store}`, { id: 'pagewaiter' })
        window.kept.client = c
        void c.locks.acquire('lock:p', { ttl: 30_000, wait: 60_000 }).then((lock) => {
          window.kept.got = { at: Date.now(), token: lock?.token }
        })
      },
      { port: proxy.port, store },
    )
    const parked0 = await metric('commits_parked_total')
    await until('the page\'s take is parked at the node', async () => (await metric('commits_parked')) >= 1)
    const replays0 = await metric('commit_replays_total')
    proxy.blackhole()
    const released = Date.now()
    await held.release()
    // Granted in the release's step, to the page's client; the answer went into the hole.
    await until('the node granted the page', async () => (await observer.adapter.get('lock:p'))?.owner !== undefined)
    const granted = (await observer.adapter.get('lock:p'))!
    expect(granted.owner).toContain('pagewaiter')
    await new Promise((r) => setTimeout(r, 200))
    expect(await page.evaluate(() => window.kept.got)).toBeUndefined()
    proxy.heal()
    await page.waitForFunction(() => window.kept.got !== undefined, undefined, { timeout: 20_000, polling: 20 })
    const got = (await page.evaluate(() => window.kept.got)) as { at: number; token: number }
    expect(got.token).toBe(granted.revision)
    // Well before the grant's 30 s TTL would have freed the key for another take.
    expect(got.at - released).toBeLessThan(15_000)
    expect(await metric('commit_replays_total')).toBeGreaterThan(replays0)
    expect(await metric('commits_parked_total')).toBeGreaterThan(parked0)
    // The key was taken once: still the granted entry.
    expect((await observer.adapter.get('lock:p'))!.revision).toBe(granted.revision)
  } finally {
    proxy.pass()
    await ctx.close()
    await observer.close()
  }
}, 90_000)
