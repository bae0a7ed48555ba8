/**
 * The browser examples of README.md and docs/*.md (those on `zaris://idb/…`)
 * run as written in headless Chromium: each is loaded as a module by a page
 * of the test harness (Vite serves it, so `'zaris'` is the source), in a
 * fresh browser context, and must finish without a page error, printing
 * something to the console. The README's "one tab of many leads" quick start
 * is also run in two tabs: one leads, the other waits, and when the leader's
 * tab closes the other leads with a larger token.
 */
import { describe, expect, test } from 'vitest'
import type { BrowserContext, Page } from 'playwright'
import { useHarness } from '../browser-harness/recorded-tabs'
import { blocksFor, blocksOf, snippetFile, titleOf } from './snippets'

const harness = useHarness()

interface Run {
  logs: string[]
  errors: string[]
  /** Settles when the module's top-level code has finished (or the page went away). */
  done: Promise<void>
}

async function open(ctx: BrowserContext): Promise<Page> {
  const page = await ctx.newPage()
  await page.goto(harness.url)
  await page.waitForFunction(() => window.harnessReady === true, undefined, { polling: 50 })
  return page
}

/** Loads `code` as a module in `page`, recording what it prints and throws. */
function runInTab(page: Page, file: string): Run {
  const logs: string[] = []
  const errors: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text())
    else logs.push(m.text())
  })
  page.on('pageerror', (err) => errors.push(String(err)))
  // A string, so that the test runner does not rewrite the page's dynamic import.
  const done = page.evaluate<void>(`import(${JSON.stringify(`/@fs${file}`)}).then(() => undefined)`)
  return { logs, errors, done }
}

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

const blocks = blocksFor('browser')

describe('README and docs examples, in Chromium', () => {
  test('there are browser examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(2)
  })

  test.each(blocks.map((b) => ({ title: titleOf(b), block: b })))('$title', async ({ block }) => {
    const snippet = snippetFile(block.code)
    const ctx = await harness.browser.newContext()
    try {
      const run = runInTab(await open(ctx), snippet.file)
      await Promise.race([run.done, new Promise((_, reject) => setTimeout(() => reject(new Error('the example did not finish within 20 s')), 20_000))])
      expect(run.errors).toEqual([])
      expect(run.logs.join('\n').trim()).not.toBe('')
    } finally {
      await ctx.close()
      snippet.dispose()
    }
  }, 40_000)

  test("README quick start, one tab of many leads: two tabs, one leads; close it and the other leads with a larger token", async () => {
    const block = blocksOf('README.md').find((b) => b.heading === 'One tab of many leads' && b.lang === 'ts')
    expect(block, 'the README has the quick start').toBeDefined()
    const snippet = snippetFile(block!.code)
    const ctx = await harness.browser.newContext()
    try {
      const tokenOf = (r: Run) => Number(/^leader token (\d+)$/m.exec(r.logs.join('\n'))?.[1])
      const first = runInTab(await open(ctx), snippet.file)
      await first.done
      expect(first.logs).toContain('this tab leads: open the feed')
      const firstToken = tokenOf(first)
      expect(firstToken).toBeGreaterThan(0)

      const secondPage = await open(ctx)
      const second = runInTab(secondPage, snippet.file)
      second.done.catch(() => {}) // it waits until it leads
      await new Promise((r) => setTimeout(r, 1_000))
      expect(second.logs, 'the second tab waits while the first leads').not.toContain('this tab leads: open the feed')

      const closedAt = performance.now()
      await ctx.pages()[0]!.close()
      await until(() => second.logs.includes('this tab leads: open the feed'), 10_000, 'the second tab to lead')
      console.log(`[figure] README quick start: the second tab led ${(performance.now() - closedAt).toFixed(0)} ms after the leader's tab closed`)
      await second.done
      expect(tokenOf(second)).toBeGreaterThan(firstToken)
      expect([...first.errors, ...second.errors]).toEqual([])
    } finally {
      await ctx.close()
      snippet.dispose()
    }
  }, 60_000)
})
