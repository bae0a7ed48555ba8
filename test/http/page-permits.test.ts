/**
 * A page's semaphore waiter through a node (issue 31), in real Chromium on
 * real node processes: its take waits at the node with its other ways, its
 * outcome due on the page's watch stream (`answerOn`). A node over memory
 * hands it a permit freed at any slot in the release's own step; a node over
 * etcd refuses the other ways, and the page's client drops them and gets
 * the permit by watching, as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect, type Permit } from 'zaris'
import { openHarnessTab } from '../browser-harness/server'
import { useHarnessWithNode } from '../browser-harness/with-node'
import { EtcdCluster } from '../etcd/server'
import { nodeMetric, until } from '../server/node-metrics'
import { startNode, type NodeProcess } from '../server/node-process'

const env = useHarnessWithNode()
let etcd: EtcdCluster | undefined
let etcdNode: NodeProcess | undefined
beforeAll(async () => {
  etcd = await EtcdCluster.start(1)
  etcdNode = await startNode(['--cors', new URL(env.harness.url).origin, '--etcd', `etcd://${etcd.members[0]!.endpoint}`])
}, 60_000)
afterAll(async () => {
  await etcdNode?.stop()
  await etcd?.dispose()
})

const metric = (node: NodeProcess, name: string) => nodeMetric(node.url, name)

/** A node holds all 3 permits; a page waits for one; the last slot is released. Resolves what the page got and its client's `orElse`. */
async function pageWaitsForPermit(node: NodeProcess, onWait: () => Promise<void>) {
  const store = `page-permits-${Math.random().toString(36).slice(2, 10)}`
  const holder = await connect(`zaris://127.0.0.1:${node.port}/${store}`, { id: 'holder' })
  const held: Permit[] = []
  for (let i = 0; i < 3; i++) held.push((await holder.semaphores.acquire('sem:p', { limit: 3, ttl: 30_000 }))!)
  const ctx = await env.harness.browser.newContext()
  try {
    const page = await openHarnessTab(ctx, env.harness.url)
    await page.evaluate(
      async ({ port, store }) => {
        const c = await window.zaris.connect(`zaris://127.0.0.1:${port}/${store}`, { id: 'pagewaiter' })
        window.kept.client = c
        void c.semaphores.acquire('sem:p', { limit: 3, ttl: 30_000, wait: 20_000 }).then((p) => (window.kept.got = { token: p?.token }))
      },
      { port: node.port, store },
    )
    await onWait()
    expect(await held[2]!.release()).toBe(true)
    await page.waitForFunction(() => window.kept.got !== undefined, undefined, { timeout: 15_000, polling: 20 })
    const got = (await page.evaluate(() => window.kept.got)) as { token?: number }
    const orElse = await page.evaluate(() => (window.kept.client as { adapter: { capabilities?: { orElse?: boolean } } }).adapter.capabilities?.orElse === true)
    return { token: got.token, released: held[2]!.token, orElse }
  } finally {
    await ctx.close()
    await holder.close()
  }
}

describe('a page waits for a permit through a node', () => {
  it('over memory: parked at the node with its other ways, handed the permit of the last slot in the release\'s step', async () => {
    const node = env.node
    const retried = await metric(node, 'commits_park_retries_total')
    const r = await pageWaitsForPermit(node, () => until('the page\'s take is parked at the node', async () => (await metric(node, 'commits_parked')) === 1, 10_000))
    expect(r.token).toBeGreaterThan(r.released)
    expect(await metric(node, 'commits_park_retries_total')).toBe(retried + 1)
    expect(r.orElse).toBe(true)
  }, 60_000)

  it('over etcd: the node refuses other ways; the page drops them and still gets the permit', async () => {
    const r = await pageWaitsForPermit(etcdNode!, () => new Promise((resolve) => setTimeout(resolve, 1_000)))
    expect(r.token).toBeGreaterThan(r.released)
    expect(r.orElse).toBe(false)
  }, 60_000)
})
