/**
 * The clock the tab tests time their histories on (./tab-clock.ts), in real
 * Chromium: every calibrated tab reads the test process's monotonic clock to
 * within half the round trip its calibration used, tabs opened apart and a
 * tab in a new renderer process (after a crash) alike, and it stays so; a
 * tab never calibrated refuses to tell the time rather than tell it wrong.
 */
import { describe, expect, test } from 'vitest'
import type { CDPSession, Page } from 'playwright'
import { useHarness } from './recorded-tabs'
import { openHarnessTab } from './server'
import { calibrateTabClock, machineNow } from './tab-clock'

const harness = useHarness()

/** Checks that `page`'s clock reads the machine's, `times` times: each reading between the two of the test process around it, give or take `slack` ms. */
async function agrees(page: Page, slack: number, times = 5): Promise<void> {
  for (let i = 0; i < times; i++) {
    const before = machineNow()
    const read = await page.evaluate(() => window.zarisNow())
    const after = machineNow()
    expect(read).toBeGreaterThanOrEqual(before - slack)
    expect(read).toBeLessThanOrEqual(after + slack)
  }
}

describe('the tabs’ clock', () => {
  test('tabs opened apart, and one in a new renderer after a crash, read the test process’s clock', async () => {
    const ctx = await harness.browser.newContext()
    try {
      const tabs: Page[] = []
      for (let i = 0; i < 3; i++) {
        tabs.push(await openHarnessTab(ctx, harness.url))
        await new Promise((r) => setTimeout(r, 200))
      }
      // A crashed tab's page is gone; its replacement runs in a new renderer process.
      // Page.crash never answers (the renderer dies with the request); the page's crash event tells.
      const cdp: CDPSession = await ctx.newCDPSession(tabs[0]!)
      const crashed = new Promise<void>((resolve) => tabs[0]!.once('crash', () => resolve()))
      void cdp.send('Page.crash').catch(() => {})
      await crashed
      tabs[0] = await openHarnessTab(ctx, harness.url)
      for (const tab of tabs) {
        // Calibrated again to learn the bound: the reading sits within half its round trip.
        const { rtt } = await calibrateTabClock(tab)
        await agrees(tab, rtt / 2 + 0.25)
      }
      await new Promise((r) => setTimeout(r, 1_000))
      for (const tab of tabs) await agrees(tab, 5, 2)
    } finally {
      await ctx.close()
    }
  }, 60_000)

  test('a tab never calibrated throws rather than tell a time on another scale', async () => {
    const ctx = await harness.browser.newContext()
    try {
      const page = await ctx.newPage()
      await page.goto(harness.url)
      await page.waitForFunction(() => window.harnessReady === true, undefined, { polling: 50 })
      const answer = await page.evaluate(() => {
        try {
          return String(window.zarisNow())
        } catch (err) {
          return (err as Error).message
        }
      })
      expect(answer).toMatch(/never calibrated/)
    } finally {
      await ctx.close()
    }
  })
})
