/**
 * A clock every tab and process of one machine shares, for histories whose
 * events come from several of them: ms since the Unix epoch, sub-ms
 * resolution.
 *
 * Not `performance.timeOrigin + performance.now()`: a process turns its
 * monotonic clock into wall time from two readings taken once (Chromium: once
 * per renderer process; Node: at start), so a process starved between them
 * is off for its whole life. CI run 66 had tabs up to 58 ms apart that way,
 * and the checker read a take as answered before it was asked. Here each
 * process anchors its high-resolution clock to a tick of `Date.now()` (the
 * one wall clock every process reads afresh), found between two
 * high-resolution readings; the narrowest of a few such brackets. A bracket
 * a preemption widened is not used.
 *
 * @module
 */

/** The two clocks a process has: the wall clock in whole ms, and a high-resolution monotonic one. */
export interface ClockSources {
  wall(): number
  hires(): number
}

/** A bracket this narrow (ms) ends the search: Chromium rounds `performance.now()` to 0.1 ms anyway. */
const NARROW_ENOUGH = 0.2
/** Brackets tried at most: each waits for a tick of the wall clock, up to 1 ms. */
const MAX_BRACKETS = 25

const processSources: ClockSources = { wall: () => Date.now(), hires: () => performance.now() }

/**
 * A clock on the shared scale (ms since the epoch): the process's
 * high-resolution clock plus the offset to the wall clock found when it was
 * made. `width` is the uncertainty of that offset, in ms.
 */
export function anchoredClock(sources: ClockSources = processSources): { now: () => number; width: number } {
  const { wall, hires } = sources
  let best = { width: Infinity, offset: 0 }
  for (let i = 0; i < MAX_BRACKETS && best.width > NARROW_ENOUGH; i++) {
    // The tick came after the last read that saw the old value (itself after `before`) and by the
    // read that saw the new one (itself before `after`).
    let before = hires()
    const old = wall()
    for (;;) {
      const start = hires()
      const seen = wall()
      const after = hires()
      if (seen !== old) {
        const width = after - before
        if (width < best.width) best = { width, offset: seen - (before + after) / 2 }
        break
      }
      before = start
    }
  }
  const { offset, width } = best
  return { now: () => offset + hires(), width }
}
