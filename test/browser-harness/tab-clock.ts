/**
 * One clock for every tab and the test process, for histories whose events
 * come from several of them: the machine's monotonic clock (CLOCK_MONOTONIC,
 * which Node's `process.hrtime` and Chromium's `performance.now()` both
 * read), in ms.
 *
 * Not `performance.timeOrigin + performance.now()`: a renderer process turns
 * its monotonic clock into wall time once, from two readings, so tabs in
 * different processes disagree by however far the wall clock moved against
 * the monotonic one between their starts, or by how long a starved process
 * waited between the two readings. CI run 66 had tabs up to 58 ms apart,
 * and the checker read a take as answered before it was asked; this VM's
 * wall clock also steps by seconds (RELIABILITY.md), so no wall clock will
 * do. A tab's `performance.now()` runs on the monotonic clock from an origin
 * of its own; the test process measures that origin against its own clock
 * by round trips and tells the tab (`window.zarisNow`, the harness page).
 *
 * @module
 */
import type { Page } from 'playwright'

/** Now on the machine's monotonic clock, in ms: the scale `window.zarisNow()` reads in a calibrated tab. */
export function machineNow(): number {
  return Number(process.hrtime.bigint()) / 1e6
}

/**
 * Measures `page`'s `performance.now()` origin against {@link machineNow}
 * (the narrowest of `samples` round trips: the tab read its clock somewhere
 * inside it) and sets the tab's `window.zarisNow` to read the machine's
 * clock. Answers the round trip used: the tab's clock is right to half of it.
 */
export async function calibrateTabClock(page: Page, samples = 12): Promise<{ rtt: number; offset: number }> {
  let best = { rtt: Infinity, offset: 0 }
  for (let i = 0; i < samples; i++) {
    const before = machineNow()
    const tab = await page.evaluate(() => performance.now())
    const after = machineNow()
    if (after - before < best.rtt) best = { rtt: after - before, offset: (before + after) / 2 - tab }
  }
  await page.evaluate((offset) => (window as unknown as { zarisSetClockOffset(o: number): void }).zarisSetClockOffset(offset), best.offset)
  return best
}
