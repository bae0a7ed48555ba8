/**
 * The suite runs its clients on a skewed wall clock: while it runs,
 * `Date.now()` in this process (or page) is {@link SUITE_SKEW} ms off, as
 * another machine's clock may be. A store that keeps its own clock (a
 * server, a database) is not moved; so a store that judges TTLs by a
 * client's clock — a deadline worked out in the client and compared on the
 * server, or the other way round — sees entries expire two seconds early or
 * late, and fails. A store in this process that reads `Date.now()` for
 * everything is moved as a whole, and stays right. Monotonic clocks
 * (`performance.now()`) are left alone: they are no machine's wall time.
 */

/** How far the suite's clients run off the store's clock (ms): behind it. */
export const SUITE_SKEW = -2_000

let installed: { real: () => number; offset: number } | undefined

/** Runs `Date.now()` `ms` off the real clock from now on (0: the real clock again). */
export function setSkew(ms: number): void {
  if (installed === undefined) {
    if (ms === 0) return
    const real = Date.now
    const state = { real, offset: ms }
    installed = state
    Date.now = () => real.call(Date) + state.offset
    return
  }
  if (ms !== 0) {
    installed.offset = ms
    return
  }
  Date.now = installed.real
  installed = undefined
}

/** How far `Date.now()` runs off now (ms). */
export function skew(): number {
  return installed?.offset ?? 0
}

/** Runs `fn` with `Date.now()` `ms` off, then puts back the skew there was. */
export async function withSkew<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  const before = skew()
  setSkew(ms)
  try {
    return await fn()
  } finally {
    setSkew(before)
  }
}
