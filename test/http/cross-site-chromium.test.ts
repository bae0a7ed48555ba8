/**
 * No cross-site use, in a real browser: Chromium opens pages of other sites
 * that try a tokenless loopback node with `fetch` (cors and no-cors, GET and
 * POST) and `EventSource`; the node refuses every one (403) and opens no
 * namespace, while a page whose origin the node was given with --cors uses
 * it. The pages are plain HTML from loopback servers of this test; Chromium
 * is the one test/browser-harness finds and launches.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser } from 'playwright'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { chromiumLaunchOptions } from '../browser-harness/chromium'
import { startNode, type NodeProcess } from '../server/node-process'

let node: NodeProcess
let browser: Browser
const servers: Server[] = []

/** A loopback server of one blank page; its origin uses `host` (127.0.0.1 or localhost). */
async function pageServer(host: string): Promise<string> {
  const server = createServer((_, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>a page</title>'))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  servers.push(server)
  return `http://${host}:${(server.address() as AddressInfo).port}`
}

let allowed: string
let sameSite: string
let crossSite: string

beforeAll(async () => {
  allowed = await pageServer('localhost')
  sameSite = await pageServer('127.0.0.1') // same site as the node (127.0.0.1), another origin
  crossSite = await pageServer('localhost') // another site than the node's 127.0.0.1, not given with --cors
  node = await startNode(['--cors', allowed])
  browser = await chromium.launch(chromiumLaunchOptions())
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await node?.kill9()
  for (const s of servers) s.close()
})

/** What a page at `origin` gets when it tries the node every way a page can. */
async function tryFrom(origin: string, ns: string): Promise<Record<string, string>> {
  const page = await browser.newPage()
  try {
    await page.goto(`${origin}/`)
    return await page.evaluate(
      async ({ url, ns }) => {
        const out: Record<string, string> = {}
        const attempt = async (name: string, f: () => Promise<string>) => {
          try {
            out[name] = await f()
          } catch (err) {
            out[name] = `refused (${(err as Error).name})`
          }
        }
        const commit = JSON.stringify({ checks: [], ops: [{ type: 'set', key: 'k', value: 1 }] })
        await attempt('no-cors GET events', async () => (await fetch(`${url}/v1/${ns}-a/events?after=0`, { mode: 'no-cors' })).type)
        await attempt('no-cors POST list', async () => (await fetch(`${url}/v1/${ns}-b/list`, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: '{"prefix":""}' })).type)
        await attempt('cors GET events', async () => String((await fetch(`${url}/v1/${ns}-c/events?after=0`)).status))
        await attempt('cors POST commit', async () => String((await fetch(`${url}/v1/${ns}-d/commit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: commit })).status))
        out['EventSource watch'] = await new Promise<string>((resolve) => {
          const es = new EventSource(`${url}/v1/${ns}-e/watch?prefix=`)
          const done = (what: string) => {
            es.close()
            resolve(what)
          }
          es.addEventListener('ready', () => done('ready'))
          es.onerror = () => done('error')
          setTimeout(() => done('no answer'), 5_000)
        })
        return out
      },
      { url: node.url, ns },
    )
  } finally {
    await page.close()
  }
}

const metrics = async () => await (await fetch(`${node.url}/metrics`)).text()
const value = (text: string, name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\d+)`, 'm').exec(text)?.[1] ?? 0)

test('pages of other sites (same-site and cross-site origins) are refused every way, and open no namespace', async () => {
  for (const [origin, ns] of [[sameSite, 'same'], [crossSite, 'cross']] as const) {
    const before = value(await metrics(), 'zaris_requests_total{route="other",status="403"}')
    const got = await tryFrom(origin, ns)
    // What the page sees: no answer it can read, no stream.
    expect(got['cors GET events'], origin).toMatch(/^refused/)
    expect(got['cors POST commit'], origin).toMatch(/^refused/)
    expect(got['EventSource watch'], origin).toBe('error')
    // What the node did: refused each request that reached it (the POST's preflight among them), opened nothing.
    const after = await metrics()
    expect(value(after, 'zaris_requests_total{route="other",status="403"}') - before, origin).toBeGreaterThanOrEqual(5)
    expect(value(after, 'zaris_namespaces'), origin).toBe(0)
  }
}, 60_000)

test('the page whose origin was given with --cors reads answers and watches', async () => {
  const got = await tryFrom(allowed, 'good')
  expect(got['cors GET events']).toBe('200')
  expect(got['cors POST commit']).toBe('200')
  expect(got['EventSource watch']).toBe('ready')
  expect(value(await metrics(), 'zaris_namespaces')).toBe(3)
}, 60_000)
