/**
 * The built demo page in real Chromium: three tabs elect one leader and agree
 * on it, closing the leader tab hands over, a lock taken in one tab shows in
 * another with its token, a frozen holder loses the lock after its TTL and the
 * timeline draws both spells; then two tabs share a lock through a real zaris
 * node process. Screenshots at two widths go to docs/screenshots/.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { resolve } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright'
import { build, preview, type PreviewServer } from 'vite'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { chromiumLaunchOptions } from '../browser-harness/chromium'

const root = resolve(import.meta.dirname, '../..')
const shots = resolve(root, 'docs/screenshots')
let server: PreviewServer
let base: string
let browser: Browser
const errors: string[] = []

beforeAll(async () => {
  await build({ configFile: resolve(root, 'demo/vite.config.ts'), logLevel: 'warn' })
  server = await preview({ configFile: resolve(root, 'demo/vite.config.ts'), preview: { port: 0, host: '127.0.0.1' }, logLevel: 'warn' })
  base = server.resolvedUrls!.local[0]!
  browser = await chromium.launch(chromiumLaunchOptions())
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await new Promise<void>((done) => server?.httpServer.close(() => done()))
})

async function openTab(context: BrowserContext, query: string): Promise<Page> {
  const page = await context.newPage()
  page.on('console', (msg) => msg.type() === 'error' && errors.push(`${page.url()}: ${msg.text()}`))
  page.on('pageerror', (err) => errors.push(`${page.url()}: ${err.message}`))
  await page.goto(`${base}?${query}`)
  await page.waitForFunction(() => document.querySelector('[data-testid=client-id]')?.textContent !== '…')
  return page
}

const text = (page: Page, id: string) => page.getByTestId(id).textContent().then((t) => t?.trim() ?? '')
const idOf = (page: Page) => text(page, 'client-id')

async function eventually(check: () => Promise<boolean>, timeout = 15_000): Promise<void> {
  const deadline = Date.now() + timeout
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 25))
  }
}

describe('demo page on IndexedDB', () => {
  test('three tabs: one leader everyone agrees on; closing it hands over; lock and timeline', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const tabs = [await openTab(context, 'store=idb'), await openTab(context, 'store=idb'), await openTab(context, 'store=idb')]
    const ids = await Promise.all(tabs.map(idOf))
    expect(new Set(ids).size).toBe(3)

    // Exactly one leader, and every tab names it.
    await eventually(async () => (await Promise.all(tabs.map((t) => text(t, 'role')))).filter((r) => r === 'leader').length === 1)
    const roles = await Promise.all(tabs.map((t) => text(t, 'role')))
    const leaderIndex = roles.indexOf('leader')
    const leaderId = ids[leaderIndex]!
    await eventually(async () => (await Promise.all(tabs.map((t) => text(t, 'leader')))).every((l) => l.startsWith(leaderId)))
    await eventually(async () => (await tabs[0]!.getByTestId('presence').locator('li').count()) === 3)

    // Close the leader's tab: another takes over and every open tab shows it.
    const closedAt = Date.now()
    await tabs[leaderIndex]!.close()
    const rest = tabs.filter((_, i) => i !== leaderIndex)
    await eventually(async () => {
      const leaders = await Promise.all(rest.map((t) => text(t, 'leader')))
      return leaders.every((l) => l !== '' && !l.startsWith(leaderId) && l.split(' ')[0] === leaders[0]!.split(' ')[0])
    })
    const handover = Date.now() - closedAt
    console.log(`demo: leader tab closed -> new leader shown in every open tab after ${handover} ms`)
    expect((await Promise.all(rest.map((t) => text(t, 'role')))).filter((r) => r === 'leader')).toHaveLength(1)

    // Acquire in tab A; tab B shows "held by A" with the token.
    const [a, b] = rest as [Page, Page]
    const [idA, idB] = [await idOf(a), await idOf(b)]
    await a.getByLabel('TTL (ms)').fill('2000')
    await a.getByTestId('acquire').click()
    await eventually(async () => (await text(a, 'lock-mine')) === 'yes')
    const tokenA = Number(await text(a, 'lock-token'))
    await eventually(async () => (await text(b, 'lock-holder')).startsWith(idA) && Number(await text(b, 'lock-token')) === tokenA)

    // A freezes (stops renewing, as a crashed tab would): after the TTL, B can take the lock.
    await a.getByTestId('freeze').click()
    expect(await b.getByTestId('acquire').isDisabled()).toBe(false)
    await b.getByTestId('acquire').click()
    expect(await text(b, 'lock-mine')).toBe('no') // still A's: the TTL has not run out
    await eventually(async () => {
      if ((await text(b, 'lock-mine')) === 'yes') return true
      await b.getByTestId('acquire').click()
      return false
    }, 10_000)
    const tokenB = Number(await text(b, 'lock-token'))
    expect(tokenB).toBeGreaterThan(tokenA)
    await eventually(async () => (await text(a, 'lock-mine')) === 'no')
    // The timeline in B draws both spells with their tokens.
    await eventually(async () => (await b.locator(`[data-testid=spell][data-owner="${idA}"][data-token="${tokenA}"]`).count()) === 1)
    await eventually(async () => (await b.locator(`[data-testid=spell][data-owner="${idB}"][data-token="${tokenB}"]`).count()) === 1)
    await b.getByTestId('increment').click()
    mkdirSync(shots, { recursive: true })
    await b.screenshot({ path: resolve(shots, 'demo-wide.png'), fullPage: true })
    await b.setViewportSize({ width: 390, height: 844 })
    await new Promise((r) => setTimeout(r, 600)) // one redraw of the timeline at the new width
    await b.screenshot({ path: resolve(shots, 'demo-phone.png'), fullPage: true })
    await b.getByTestId('release').click()
    await context.close()
    expect(errors).toEqual([])
  }, 90_000)
})

describe('demo page on a zaris node', () => {
  let node: ChildProcess
  let nodeUrl: string

  beforeAll(async () => {
    const origin = new URL(base).origin
    node = spawn(process.execPath, ['--import', 'tsx', 'src/server/cli.ts', 'serve', '--port', '0', '--cors', origin], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
    const line = await new Promise<string>((done, fail) => {
      node.stdout!.on('data', (chunk: Buffer) => {
        const m = /https?:\/\/[\w.[\]:-]+/.exec(chunk.toString())
        if (m) done(m[0])
      })
      node.on('exit', (code) => fail(new Error(`node exited ${code}`)))
    })
    nodeUrl = line.replace(/^https?:/, 'zaris:') + '/demo-test'
  }, 30_000)
  afterAll(() => {
    node?.kill('SIGKILL')
  })

  test('two tabs share a lock through the node', async () => {
    const context = await browser.newContext()
    const query = `store=node&node=${encodeURIComponent(nodeUrl)}`
    const [a, b] = [await openTab(context, query), await openTab(context, query)]
    const idA = await idOf(a)
    await a.getByTestId('acquire').click()
    await eventually(async () => (await text(a, 'lock-mine')) === 'yes')
    const token = await text(a, 'lock-token')
    await eventually(async () => (await text(b, 'lock-holder')).startsWith(idA) && (await text(b, 'lock-token')) === token)
    await b.getByTestId('acquire').click()
    expect(await text(b, 'lock-mine')).toBe('no')
    await a.getByTestId('release').click()
    await eventually(async () => (await text(b, 'lock-holder')) === 'free')
    await context.close()
    expect(errors).toEqual([])
  }, 60_000)
})
