/**
 * The timing loop every scenario uses, in Node and in the browser page alike
 * (no Node built-in here): run one operation back to back for a while and
 * keep each one's latency.
 *
 * @module
 */

/** What one trial of one contender measured. */
export interface Trial {
  /** Operations completed. */
  ops: number
  /** Wall time of the trial in ms. */
  ms: number
  /** Latency of each operation in ms (possibly a sample). */
  lat: number[]
  /** Scenario-specific counters (attempts, successes, ...). */
  extra?: Record<string, number>
}

/** Runs `op` back to back until `durationMs` has passed (or `maxOps` ran); at least `minOps` times. */
export async function loop(op: () => Promise<unknown>, durationMs: number, maxOps = Infinity, minOps = 1): Promise<Trial> {
  const lat: number[] = []
  const start = performance.now()
  const end = start + durationMs
  let now = start
  let ops = 0
  while (ops < maxOps && (now < end || ops < minOps)) {
    const t = now
    await op()
    now = performance.now()
    lat.push(now - t)
    ops++
  }
  return { ops, ms: now - start, lat }
}

/** The value at quantile `q` (0..1) of `values` (nearest rank). */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[rank]!
}

/** The median of `values`. */
export function median(values: number[]): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** Time comparable across processes and tabs of one machine: wall-clock ms with sub-ms resolution. */
export function absNow(): number {
  return performance.timeOrigin + performance.now()
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
