/**
 * `list` through a node, page by page: over 100 000 keys every key comes
 * back, in order, each answer within the node's page limits (entries and
 * bytes), over plain HTTP and over the framed connection; `client.list()`
 * pages through on its own.
 */
import { afterAll, expect, test } from 'vitest'
import { Client } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { createHandler, listen, memoryBackend } from 'zaris/server'

const cleanup: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const c of cleanup.reverse()) await c()
})

async function node(options: { maxPageBytes?: number; maxPageEntries?: number } = {}) {
  const backend = memoryBackend()
  const served = await listen(createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf, ...options }), { port: 0 })
  cleanup.push(async () => {
    await served.close()
    await backend.close()
  })
  return served.url
}

/** Writes `n` keys `k/<i>` (zero-padded) with values from `value(i)`, a commit of many ops at a time. */
async function fill(url: string, ns: string, n: number, value: (i: number) => string, perCommit: number): Promise<string[]> {
  const adapter = httpAdapter({ endpoints: [url], namespace: ns })
  const keys = Array.from({ length: n }, (_, i) => `k/${String(i).padStart(6, '0')}`)
  for (let i = 0; i < n; i += perCommit) {
    const r = await adapter.commit([], keys.slice(i, i + perCommit).map((key, j) => ({ type: 'set' as const, key, value: value(i + j) })))
    if (!r.ok) throw new Error('commit failed')
  }
  await adapter.close()
  return keys
}

/** Pages through `POST /list` by hand; returns the keys and the size of each answer. */
async function pageByHand(url: string, ns: string, limit?: number): Promise<{ keys: string[]; sizes: number[]; counts: number[] }> {
  const keys: string[] = []
  const sizes: number[] = []
  const counts: number[] = []
  let after: string | undefined
  for (;;) {
    const res = await fetch(`${url}/v1/${ns}/list`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prefix: 'k/', after, limit }) })
    expect(res.status).toBe(200)
    const text = await res.text()
    sizes.push(Buffer.byteLength(text))
    const page = JSON.parse(text) as { entries: Array<{ key: string }>; more: boolean }
    counts.push(page.entries.length)
    keys.push(...page.entries.map((e) => e.key))
    if (!page.more) return { keys, sizes, counts }
    after = page.entries.at(-1)!.key
  }
}

test('list over 100 000 keys returns them all through pages, each answer within the page limits', async () => {
  const url = await node()
  const keys = await fill(url, 'big', 100_000, (i) => `v${i}`, 1_000)
  const byHand = await pageByHand(url, 'big')
  expect(byHand.keys).toEqual(keys)
  expect(Math.max(...byHand.counts)).toBe(1_000)
  expect(Math.max(...byHand.sizes)).toBeLessThanOrEqual(1024 * 1024)
  expect(byHand.counts).toHaveLength(100)
  // A client's list() pages through on its own (over the framed connection).
  const client = new Client(httpAdapter({ endpoints: [url], namespace: 'big' }))
  const started = performance.now()
  const all = await client.list('k/')
  console.log(`[figure] client.list() of 100 000 keys through a memory node: ${(performance.now() - started).toFixed(0)} ms in 100 pages`)
  expect(all.map((e) => e.key)).toEqual(keys)
  // A smaller limit than the node's is kept.
  expect((await pageByHand(url, 'big', 30_000)).counts.slice(0, 3)).toEqual([1_000, 1_000, 1_000])
  const few = await client.adapter.list('k/', { limit: 7 })
  expect(few.entries.map((e) => e.key)).toEqual(keys.slice(0, 7))
  expect(few.more).toBe(true)
  await client.close()
}, 60_000)

test('large values: each page stops at the byte limit (and says more), so no answer passes it', async () => {
  const maxPageBytes = 96 * 1024
  const url = await node({ maxPageBytes })
  // Values from 10 bytes to 60 KiB: some pages hold one entry, some many.
  const keys = await fill(url, 'wide', 300, (i) => 'x'.repeat(i % 7 === 0 ? 60 * 1024 : 10 + i), 1)
  const byHand = await pageByHand(url, 'wide')
  expect(byHand.keys).toEqual(keys)
  expect(Math.max(...byHand.sizes)).toBeLessThanOrEqual(maxPageBytes)
  expect(Math.min(...byHand.counts)).toBeGreaterThanOrEqual(1)
  expect(byHand.counts.length).toBeGreaterThan(300 * 10 / 1_000)
  const client = new Client(httpAdapter({ endpoints: [url], namespace: 'wide' }))
  expect((await client.list('k/')).map((e) => e.key)).toEqual(keys)
  await client.close()
}, 60_000)

test('a page limit below the body limit and 8 KiB is refused at construction', () => {
  const backend = memoryBackend()
  expect(() => createHandler({ adapterFor: backend.adapterFor, maxBodyBytes: 64 * 1024, maxPageBytes: 64 * 1024 })).toThrow(/maxPageBytes/)
})
