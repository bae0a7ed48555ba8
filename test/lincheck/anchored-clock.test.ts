/**
 * The clock histories from several tabs are timed on: a process whose own
 * idea of wall time is off (a renderer that was starved while it read its
 * two clocks, as CI run 66's tabs were, by up to 58 ms) still reads the
 * machine's wall clock to a fraction of a ms, even when it is preempted
 * while it looks for a tick. Simulated clocks, so the skew and the
 * preemptions are exact; the last test reads this process's real ones.
 */
import { describe, expect, test } from 'vitest'
import { anchoredClock, type ClockSources } from './anchored-clock'

/**
 * A process's clocks over a true time that advances `step` ms per read, with
 * `pauses` (read number → ms) where it is preempted: the wall clock in whole
 * ms, and a high-resolution one `skew` ms off, rounded to `grain` ms as
 * Chromium rounds `performance.now()`.
 */
function simulated(o: { start: number; skew: number; step: number; grain?: number; pauses?: Map<number, number> }): ClockSources & { truth(): number } {
  let t = o.start
  let reads = 0
  const tick = () => {
    t += o.step + (o.pauses?.get(reads) ?? 0)
    reads++
  }
  const grain = o.grain ?? 0
  return {
    wall: () => (tick(), Math.floor(t)),
    hires: () => (tick(), grain ? Math.floor((t - o.start + o.skew) / grain) * grain : t - o.start + o.skew),
    truth: () => t,
  }
}

describe('anchoredClock', () => {
  test('a process whose high-resolution clock is 58 ms off reads true wall time within 0.2 ms', () => {
    const clocks = simulated({ start: 1_796_622_988_000.37, skew: 58.4, step: 0.0004 })
    const { now, width } = anchoredClock(clocks)
    expect(width).toBeLessThanOrEqual(0.2)
    const read = now()
    expect(Math.abs(read - clocks.truth())).toBeLessThanOrEqual(0.2)
  })

  test("with Chromium's 0.1 ms rounding the error stays within the rounding", () => {
    const clocks = simulated({ start: 1_796_622_988_000.81, skew: -31, step: 0.002, grain: 0.1 })
    const { now } = anchoredClock(clocks)
    expect(Math.abs(now() - clocks.truth())).toBeLessThanOrEqual(0.25)
  })

  test('a bracket a preemption widened is not the one used', () => {
    // Preempted for 30 ms between two reads in each of the first brackets' waits.
    const pauses = new Map([3, 9, 2_000, 2_600, 5_400].map((read) => [read, 30 + read / 1000]))
    const clocks = simulated({ start: 1_796_622_988_000.5, skew: 12, step: 0.001, pauses })
    const { now, width } = anchoredClock(clocks)
    expect(width).toBeLessThanOrEqual(0.2)
    expect(Math.abs(now() - clocks.truth())).toBeLessThanOrEqual(0.2)
  })

  test('when every bracket is wide (a starved process: 0.15 ms a read), the width says how far off the clock may be', () => {
    const clocks = simulated({ start: 1_796_622_988_000.2, skew: 40, step: 0.15 })
    const { now, width } = anchoredClock(clocks)
    expect(width).toBeGreaterThan(0.2)
    expect(Math.abs(now() - clocks.truth())).toBeLessThanOrEqual(width / 2 + 0.15)
  })

  test("this process's clocks: the anchored clock stays within a ms of Date.now()", () => {
    const { now, width } = anchoredClock()
    expect(width).toBeLessThan(5)
    for (let i = 0; i < 5; i++) {
      const before = Date.now()
      const read = now()
      const after = Date.now() + 1
      expect(read).toBeGreaterThanOrEqual(before - width / 2 - 0.1)
      expect(read).toBeLessThanOrEqual(after + width / 2 + 0.1)
    }
  })
})
