/**
 * Runs contenders side by side: trial after trial, zaris and its peers take
 * turns (the order rotates every trial), so load from anything else on the
 * machine falls on all of them alike. One untimed warm-up trial each first.
 *
 * @module
 */
import { median, quantile, type Trial } from './measure'

/** One side of a comparison. */
export interface Contender {
  label: string
  /** True for zaris rows; the others are peers. */
  zaris: boolean
  /** Runs one trial (`index` -1 is the warm-up, not counted). */
  trial(index: number): Promise<Trial>
}

/** One contender's aggregated figures. */
export interface Row {
  contender: string
  zaris: boolean
  /** Median over trials of ops per second (NaN where throughput means nothing). */
  opsPerSec: number
  /** Latency quantiles in ms over every operation of every trial. */
  p50: number
  p99: number
  trials: number
  /** Operations timed in all. */
  n: number
  /** Scenario counters summed over the trials. */
  extra: Record<string, number>
}

/** Runs `trials` alternating trials of every contender and aggregates them. */
export async function alternate(contenders: Contender[], trials: number, options: { warmup?: boolean; throughput?: boolean } = {}): Promise<Row[]> {
  const results = contenders.map(() => [] as Trial[])
  if (options.warmup ?? true) for (const c of contenders) await c.trial(-1)
  for (let t = 0; t < trials; t++) {
    for (let k = 0; k < contenders.length; k++) {
      const i = (t + k) % contenders.length
      results[i]!.push(await contenders[i]!.trial(t))
    }
  }
  return contenders.map((c, i) => aggregate(c, results[i]!, options.throughput ?? true))
}

/** Aggregates the trials of one contender. */
export function aggregate(c: { label: string; zaris: boolean }, trials: Trial[], throughput = true): Row {
  const lat = trials.flatMap((t) => t.lat)
  const extra: Record<string, number> = {}
  for (const t of trials) for (const [k, v] of Object.entries(t.extra ?? {})) extra[k] = (extra[k] ?? 0) + v
  return {
    contender: c.label,
    zaris: c.zaris,
    opsPerSec: throughput ? median(trials.map((t) => (t.ops * 1000) / t.ms)) : NaN,
    p50: quantile(lat, 0.5),
    p99: quantile(lat, 0.99),
    trials: trials.length,
    n: lat.length,
    extra,
  }
}
