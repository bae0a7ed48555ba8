/**
 * The built demo page in real Chromium, three tabs at a time, on IndexedDB
 * and on a real zaris node process:
 * - the leader tab (which also holds the lock) closes: another tab's plain
 *   "Acquire" gets the lock within 1.5 s and the third tab shows it; a new
 *   leader is elected; before that, the tabs' titles told leader and
 *   followers apart;
 * - fencing: a frozen holder loses the lock at its TTL to a waiting tab; once
 *   unfrozen, its write to the shared document is refused (FENCED, its token
 *   against the current one) and the new holder's is accepted;
 * - the wait line: tabs that wait are listed in order, served in order, and
 *   one that stops waiting leaves it; with it, the TTL field's message, time
 *   left as a number and for screen readers, and renewals folded in the log;
 * - switching stores there and back: no page error, and "Open tabs" lists
 *   the open tabs again.
 * Then screenshots at two widths (docs/screenshots/) and an axe-core check
 * (no serious or critical violations). Every tab's console errors and
 * uncaught errors fail the test.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { resolve } from 'node:path'
import { createRequire } from 'node:module'
import type { AxeResults } from 'axe-core'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright'
import { build, preview, type PreviewServer } from 'vite'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { chromiumLaunchOptions } from '../browser-harness/chromium'
import { cliBundle } from '../server/cli-bundle'

const root = resolve(import.meta.dirname, '../..')
const axeSource = createRequire(import.meta.url).resolve('axe-core/axe.min.js')
const shots = resolve(root, 'docs/screenshots')
let server: PreviewServer
let base: string
let browser: Browser
let node: ChildProcess
let nodeBase: string
let errors: string[] = []

beforeAll(async () => {
  await build({ configFile: resolve(root, 'demo/vite.config.ts'), logLevel: 'warn' })
  server = await preview({ configFile: resolve(root, 'demo/vite.config.ts'), preview: { port: 0, host: '127.0.0.1' }, logLevel: 'warn' })
  base = server.resolvedUrls!.local[0]!
  browser = await chromium.launch(chromiumLaunchOptions())
  node = spawn(process.execPath, [cliBundle(), 'serve', '--port', '0', '--cors', new URL(base).origin], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
  const url = await new Promise<string>((done, fail) => {
    node.stdout!.on('data', (chunk: Buffer) => {
      const m = /https?:\/\/[\w.[\]:-]+/.exec(chunk.toString())
      if (m) done(m[0])
    })
    node.on('exit', (code) => fail(new Error(`node exited ${code}`)))
  })
  nodeBase = url.replace(/^https?:/, 'zaris:')
}, 120_000)

afterAll(async () => {
  node?.kill('SIGKILL')
  await browser?.close()
  await new Promise<void>((done) => server?.httpServer.close(() => done()))
})

afterEach(() => {
  const seen = errors
  errors = []
  expect(seen, 'console errors and uncaught errors in the tabs').toEqual([])
})

type Store = 'idb' | 'node'

/** The page's query for `store`; on the node, a namespace of its own per test. */
function queryFor(store: Store): string {
  if (store === 'idb') return 'store=idb'
  return `store=node&node=${encodeURIComponent(`${nodeBase}/demo-${Math.random().toString(36).slice(2, 8)}`)}`
}

async function openTab(context: BrowserContext, query: string): Promise<Page> {
  const page = await context.newPage()
  page.on('console', (msg) => msg.type() === 'error' && errors.push(`${page.url()}: ${msg.text()}`))
  page.on('pageerror', (err) => errors.push(`${page.url()}: ${err.message}`))
  await page.goto(`${base}?${query}`)
  await page.waitForFunction(() => document.body.dataset.connected !== undefined, undefined, { polling: 25 })
  return page
}

async function threeTabs(store: Store, viewport = { width: 1280, height: 900 }): Promise<{ context: BrowserContext; tabs: Page[]; ids: string[] }> {
  const context = await browser.newContext({ viewport })
  const query = queryFor(store)
  const tabs = [await openTab(context, query), await openTab(context, query), await openTab(context, query)]
  const ids = await Promise.all(tabs.map(idOf))
  expect(new Set(ids).size).toBe(3)
  return { context, tabs, ids }
}

/** What each tab shows of the lock, its line and its log: said when a check of them fails. */
async function tabStates(tabs: Page[]): Promise<string> {
  const states = await Promise.all(
    tabs.map(async (t, i) => {
      const facts = await Promise.all(['client-id', 'lock-mine', 'lock-holder', 'lock-token', 'lock-left', 'status', 'wait-line'].map((id) => text(t, id).catch(() => '?')))
      const log = await t.getByTestId('log').locator('li').evaluateAll((lis) => lis.slice(0, 12).map((li) => li.textContent?.trim())) // newest first
      return `tab ${i} (${facts.join(' | ')}): log ${JSON.stringify(log)}`
    }),
  )
  return states.join('; ')
}

const text = (page: Page, id: string) => page.getByTestId(id).textContent().then((t) => t?.trim() ?? '')
const idOf = (page: Page) => text(page, 'client-id')
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * Clicks (or checks) a control in the tab brought to the front first, as a
 * user's click would. Chromium draws a background tab at about 2 frames a
 * second, and Playwright's actionability check waits for two frames of a
 * stable box: 1-2 s a click in any tab but the last one opened.
 */
async function click(page: Page, testId: string, how: 'click' | 'check' = 'click'): Promise<void> {
  await page.bringToFront()
  await page.getByTestId(testId)[how]()
}

/** axe-core's checks of the page as it is (WCAG rules and best practices). */
async function axe(page: Page): Promise<AxeResults> {
  await page.addScriptTag({ path: axeSource })
  return page.evaluate(() => (window as unknown as { axe: { run(): Promise<AxeResults> } }).axe.run())
}

/** Waits until `check` holds (the very condition asserted after it). */
async function eventually(check: () => Promise<boolean>, timeout = 15_000, what = 'condition', every = 25, explain?: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + timeout
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not met within ${timeout} ms${explain ? `; ${await explain().catch((e: Error) => `(no state: ${e.message})`)}` : ''}`)
    await sleep(every)
  }
}

for (const store of ['idb', 'node'] as const) {
  describe(`demo page on ${store === 'idb' ? 'IndexedDB' : 'a zaris node'}`, () => {
    test('the leader tab holds the lock and closes: a plain Acquire in another tab gets it within 1.5 s, the third tab shows it, a new leader is elected; titles tell leader and followers apart', async () => {
      const { context, tabs, ids } = await threeTabs(store)
      const roles = () => Promise.all(tabs.filter((t) => !t.isClosed()).map((t) => text(t, 'role')))
      await eventually(async () => (await roles()).filter((r) => r === 'leader').length === 1, 15_000, 'one leader')
      const leaderIndex = (await roles()).indexOf('leader')
      const leader = tabs[leaderIndex]!
      await eventually(async () => (await Promise.all(tabs.map((t) => text(t, 'presence')))).every((p) => ids.every((id) => p.includes(id))), 15_000, 'every tab lists every tab')

      // Titles: the leader's says so, the others' say follower; after taking the lock, the holder's says that too.
      await click(leader, 'acquire')
      await eventually(async () => (await text(leader, 'lock-mine')) === 'yes')
      const [a, b] = tabs.filter((_, i) => i !== leaderIndex) as [Page, Page]
      await eventually(async () => (await leader.title()).startsWith('Leader · holds the lock'), 5_000, 'leader title')
      await eventually(async () => (await a.title()).startsWith('Follower') && (await b.title()).startsWith('Follower'), 5_000, 'follower titles')
      const titles = await Promise.all(tabs.map((t) => t.title()))
      expect(new Set(titles).size).toBe(3)
      expect(await leader.locator('link[rel=icon]').getAttribute('data-state')).toBe('H')
      const idLeader = ids[leaderIndex]!
      await eventually(async () => (await text(a, 'lock-holder')).startsWith(idLeader) && (await text(b, 'lock-holder')).startsWith(idLeader))

      // Close it. Tab a clicks the plain Acquire until it holds; tab b must show a as holder.
      const closedAt = Date.now()
      await leader.close({ runBeforeUnload: true })
      await eventually(async () => {
        if ((await text(a, 'lock-mine')) === 'yes') return true
        // The button's own click, as often as a user could: no actionability waits in between (a disabled button ignores it).
        await a.evaluate(() => document.querySelector<HTMLButtonElement>('[data-testid=acquire]')!.click())
        return false
      }, 10_000, 'the plain Acquire gets the lock', 100).catch(async (err) => {
        const state = await Promise.all(['lock-holder', 'lock-mine', 'lock-token', 'status', 'lock-left'].map((id) => text(a, id)))
        throw new Error(`${(err as Error).message}; tab a shows ${JSON.stringify(state)}, acquire disabled: ${await a.getByTestId('acquire').isDisabled()}`)
      })
      const took = Date.now() - closedAt
      console.log(`demo (${store}): holder tab closed -> another tab's plain Acquire held the lock after ${took} ms (TTL 8 000 ms)`)
      expect(took).toBeLessThan(1_500)
      const idA = await idOf(a)
      await eventually(async () => (await text(b, 'lock-holder')).startsWith(idA), 5_000, 'the third tab shows the new holder')
      // A new leader, named by both, and exactly one badge says "leader": wait for what is asserted.
      await eventually(async () => {
        const names = await Promise.all([a, b].map((t) => text(t, 'leader')))
        const badges = await Promise.all([a, b].map((t) => text(t, 'role')))
        return names.every((n) => n.split(' ')[0] === names[0]!.split(' ')[0] && !n.startsWith(idLeader) && n !== 'nobody yet') && badges.filter((r) => r === 'leader').length === 1
      }, 15_000, 'a new leader')
      await click(a, 'release')
      await context.close()
    }, 120_000)

    test('fencing: a frozen holder loses the lock to a waiting tab; unfrozen, its write is refused (FENCED, its token against the current one), the new holder\'s is accepted', async () => {
      const { context, tabs } = await threeTabs(store)
      const [a, b, c] = tabs as [Page, Page, Page]
      await a.getByTestId('ttl').fill('2000')
      await click(a, 'acquire')
      await eventually(async () => (await text(a, 'lock-mine')) === 'yes')
      const tokenA = Number(await text(a, 'lock-token'))
      await click(a, 'doc-write')
      await eventually(async () => (await a.getByTestId('doc-result').getAttribute('data-outcome')) === 'accepted')
      await click(a, 'freeze')
      await click(b, 'acquire-wait')
      await eventually(async () => (await text(b, 'lock-mine')) === 'yes', 10_000, 'the waiting tab gets the lock at the frozen holder\'s TTL')
      const tokenB = Number(await text(b, 'lock-token'))
      expect(tokenB).toBeGreaterThan(tokenA)
      await eventually(async () => (await text(a, 'lock-mine')) === 'no')
      await click(a, 'unfreeze')
      await a.getByTestId('doc-text').fill('stale write from the frozen tab')
      await click(a, 'doc-write')
      const result = a.getByTestId('doc-result')
      await eventually(async () => (await result.getAttribute('data-outcome')) === 'refused', 5_000, 'the stale write is refused')
      expect(await result.textContent()).toContain('FENCED')
      expect(await result.getAttribute('data-token')).toBe(String(tokenA))
      expect(await result.getAttribute('data-current')).toBe(String(tokenB))
      await b.getByTestId('doc-text').fill('fresh write from the new holder')
      await click(b, 'doc-write')
      await eventually(async () => (await b.getByTestId('doc-result').getAttribute('data-outcome')) === 'accepted')
      for (const t of tabs) await eventually(async () => (await text(t, 'doc-value')).includes('fresh write from the new holder') && (await text(t, 'doc-value')).includes(String(tokenB)))
      // The timeline in c drew both spells with their tokens.
      const idA = await idOf(a)
      const idB = await idOf(b)
      await eventually(async () => (await c.locator(`[data-testid=spell][data-owner="${idA}"][data-token="${tokenA}"]`).count()) === 1)
      await eventually(async () => (await c.locator(`[data-testid=spell][data-owner="${idB}"][data-token="${tokenB}"]`).count()) === 1)
      if (store === 'idb') {
        // The page as it tells the story: the refused write in the stale tab. Kept current by this test.
        mkdirSync(shots, { recursive: true })
        await click(a, 'increment')
        await a.screenshot({ path: resolve(shots, 'demo-wide.png'), fullPage: true })
        const results = await axe(a)
        const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
        expect(serious.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([])
        console.log(`axe-core: ${results.violations.length} violations (${results.violations.map((v) => `${v.id}:${v.impact}`).join(', ') || 'none'}), ${results.passes.length} rules passed`)
        await a.setViewportSize({ width: 390, height: 844 })
        await sleep(600) // one redraw of the timeline at the new width
        await a.screenshot({ path: resolve(shots, 'demo-phone.png'), fullPage: true })
        const phone = await axe(a)
        expect(phone.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([])
      }
      await click(b, 'release')
      await context.close()
    }, 120_000)

    test('shared and exclusive: two tabs hold the lock shared at once, an exclusive request waits in line behind them; the semaphore lets three of four tabs hold a permit and the fourth gets the first given back', async () => {
      const { context, tabs } = await threeTabs(store)
      const [a, b, c] = tabs as [Page, Page, Page]
      const [idA, idB, idC] = (await Promise.all(tabs.map(idOf))) as [string, string, string]
      const line = (t: Page) => t.getByTestId('wait-line').locator('li[data-owner]').evaluateAll((lis) => lis.map((li) => `${li.getAttribute('data-owner')} ${li.getAttribute('data-mode')}`))
      for (const t of [a, b]) {
        await click(t, 'mode-shared', 'check')
        await click(t, 'acquire')
      }
      for (const t of [a, b]) await eventually(async () => (await text(t, 'lock-mine')) === 'yes', 5_000, 'both readers hold it')
      await eventually(async () => (await text(c, 'lock-mode')) === 'shared by 2' && (await text(c, 'lock-holder')).includes(idA) && (await text(c, 'lock-holder')).includes(idB), 5_000, 'the third tab sees two shared holders')
      expect(Number(await text(a, 'lock-token'))).not.toBe(Number(await text(b, 'lock-token'))) // a token each
      // An exclusive request in c: a plain try gets nothing, a wait stands in line (and keeps new readers out).
      await click(c, 'acquire')
      await eventually(async () => (await text(c, 'status')).includes('held by'), 5_000, 'the plain try is refused')
      await click(c, 'acquire-wait')
      await eventually(async () => JSON.stringify(await line(a)) === JSON.stringify([`${idC} exclusive`]), 5_000, 'c waits in line, exclusive')
      await click(a, 'release')
      await eventually(async () => (await text(c, 'lock-mine')) === 'no' && (await text(c, 'lock-mode')) === 'shared by 1', 5_000, 'one reader left: c still waits')
      await click(b, 'release')
      await eventually(async () => (await text(c, 'lock-mine')) === 'yes' && (await text(a, 'lock-mode')) === 'exclusive', 5_000, 'the writer holds it once both readers left')
      await click(c, 'release')

      // The semaphore: three permits for four tabs.
      const d = await openTab(context, await a.evaluate(() => location.search.slice(1))) // the same store (and namespace) as the others
      const idD = await idOf(d)
      for (const t of [a, b, c]) await click(t, 'sem-acquire')
      for (const t of [a, b, c]) await eventually(async () => (await t.getByTestId('sem-mine').getAttribute('data-state')) === 'holds', 5_000, 'three tabs hold a permit')
      await click(d, 'sem-acquire')
      await eventually(async () => (await d.getByTestId('sem-mine').getAttribute('data-state')) === 'waiting' && (await text(d, 'sem-count')) === '3 of 3', 5_000, 'the fourth waits: all three permits are out')
      const slots = await d.getByTestId('sem-holders').locator('li[data-owner]').evaluateAll((lis) => lis.map((li) => `${li.getAttribute('data-slot')} ${li.getAttribute('data-owner')}`))
      expect(slots.map((x) => x.split(' ')[0])).toEqual(['0', '1', '2'])
      expect(slots.map((x) => x.split(' ')[1]).sort()).toEqual([idA, idB, idC].sort())
      await click(b, 'sem-release')
      await eventually(async () => (await d.getByTestId('sem-mine').getAttribute('data-state')) === 'holds', 5_000, 'the fourth gets the permit given back', 25, () => tabStates([a, b, c, d]))
      await eventually(async () => (await d.getByTestId('sem-holders').locator(`li[data-owner="${idD}"]`).count()) === 1 && (await text(a, 'sem-count')) === '3 of 3', 5_000, 'every tab sees it')
      for (const t of [a, c, d]) await click(t, 'sem-release')
      await eventually(async () => (await text(b, 'sem-count')) === '0 of 3', 5_000, 'all given back')
      await context.close()
    }, 120_000)

    test('the wait line: waiting tabs are listed in order in every tab, served in order; one that stops waiting leaves it', async () => {
      const { context, tabs } = await threeTabs(store)
      const [a, b, c] = tabs as [Page, Page, Page]
      const [, idB, idC] = await Promise.all(tabs.map(idOf))
      const line = (t: Page) => t.getByTestId('wait-line').locator('li[data-owner]').evaluateAll((lis) => lis.map((li) => li.getAttribute('data-owner')))
      // A TTL that is not one gets a message and no acquire; a good one clears it.
      for (const bad of ['', '0', '1.5', '99999999']) {
        await a.getByTestId('ttl').fill(bad)
        await eventually(async () => (await text(a, 'ttl-error')).includes('whole number of milliseconds') && (await a.getByTestId('acquire').isDisabled()))
      }
      await a.getByTestId('ttl').fill('3000')
      await eventually(async () => (await text(a, 'ttl-error')) === '' && !(await a.getByTestId('acquire').isDisabled()))
      // The layout does not jump: where the lock panel sits and how tall it is stay the same in every state below.
      const boxes: string[] = []
      const box = async () => boxes.push(JSON.stringify(await c.locator('#lock-panel').boundingBox()))
      await box()
      await click(a, 'acquire')
      await eventually(async () => (await text(a, 'lock-mine')) === 'yes')
      await click(b, 'acquire-wait')
      await eventually(async () => JSON.stringify(await line(a)) === JSON.stringify([idB]), 5_000, 'b in line')
      await click(c, 'acquire-wait')
      for (const t of tabs) await eventually(async () => JSON.stringify(await line(t)) === JSON.stringify([idB, idC]), 5_000, 'b then c in line, in every tab')
      await box()
      expect(await b.title()).toContain('waiting for the lock')
      expect(await b.locator('link[rel=icon]').getAttribute('data-state')).toBe('W')
      await click(a, 'release')
      await eventually(async () => (await text(b, 'lock-mine')) === 'yes', 5_000, 'the first in line gets the lock', 25, () => tabStates(tabs))
      expect(await text(c, 'lock-mine')).toBe('no')
      for (const t of tabs) await eventually(async () => JSON.stringify(await line(t)) === JSON.stringify([idC]), 5_000, 'c alone in line')
      await box()
      // Time left, as a number and for screen readers.
      expect(await text(c, 'lock-left')).toMatch(/^\d+\.\d s$/)
      expect(await c.getByRole('progressbar').getAttribute('aria-valuetext')).toMatch(/^\d+\.\d seconds left$/)
      await click(c, 'cancel-wait')
      for (const t of tabs) await eventually(async () => (await line(t)).length === 0, 5_000, 'the line is empty')
      await box()
      expect(new Set(boxes).size, `the lock panel moved or changed height: ${boxes.join(' ')}`).toBe(1)
      await eventually(async () => !(await c.title()).includes('waiting'), 5_000)
      // The watch log folds b's renewals (3 s TTL: one a second) into the line of its acquire.
      await eventually(async () => /renewals? folded/.test(await text(a, 'log-folded')), 5_000, 'renewals folded')
      expect(await a.getByTestId('log').locator('li.renewal').first().isVisible()).toBe(false)
      await click(a, 'log-renewals', 'check')
      expect(await a.getByTestId('log').locator('li.renewal').first().isVisible()).toBe(true)
      await click(b, 'release')
      await context.close()
    }, 120_000)
  })
}

describe('switching stores', () => {
  test('IndexedDB -> node -> IndexedDB: no page error, and "Open tabs" lists the open tabs again', async () => {
    const context = await browser.newContext()
    const query = queryFor('node').replace('store=node', 'store=idb')
    const [a, b] = [await openTab(context, query), await openTab(context, query)]
    const [idA, idB] = [await idOf(a), await idOf(b)]
    const presence = (t: Page) => t.getByTestId('presence').locator('li[data-id]').evaluateAll((lis) => lis.map((li) => li.getAttribute('data-id')).sort())
    await eventually(async () => JSON.stringify(await presence(a)) === JSON.stringify([idA, idB].sort()), 15_000, 'both tabs listed')
    // Hold things in a, so that unmounting has a lock and a wait to end.
    await click(a, 'acquire')
    await eventually(async () => (await text(a, 'lock-mine')) === 'yes')
    await click(b, 'acquire-wait')
    for (let round = 0; round < 2; round++) {
      await a.getByTestId('store').selectOption('node')
      await eventually(async () => (await a.evaluate(() => document.body.dataset.connected ?? '')).startsWith('zaris://127.0.0.1'), 15_000, 'connected to the node')
      await eventually(async () => JSON.stringify(await presence(a)) === JSON.stringify([idA]), 15_000, 'a alone on the node')
      await a.getByTestId('store').selectOption('idb')
      await eventually(async () => (await a.evaluate(() => document.body.dataset.connected ?? '')).startsWith('zaris://idb'), 15_000, 'back on IndexedDB')
      await eventually(async () => JSON.stringify(await presence(a)) === JSON.stringify([idA, idB].sort()), 15_000, '"Open tabs" lists both again')
    }
    // a's lock went with the old client, so b (waiting all along on IndexedDB) got it.
    await eventually(async () => (await text(b, 'lock-mine')) === 'yes', 10_000)
    await context.close()
  }, 120_000)
})
