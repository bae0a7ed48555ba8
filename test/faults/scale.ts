/**
 * How big a fault run is. `npm test` runs the short version of every fault
 * test; `npm run test:faults` sets `ZARIS_FAULT_SCALE=1`, the long version
 * the acceptance asks for. `ZARIS_FAULT_SEED` fixes the random
 * choices (which process is killed when, what the fuzzer sends), so a
 * failing run can be repeated; every test prints the seed it used.
 */

/** 0: the short run of `npm test`; 1: the long run; values between or above scale the long counts. */
export const SCALE = Math.max(0, Number(process.env.ZARIS_FAULT_SCALE ?? 0) || 0)

/** True for `npm run test:faults`. */
export const LONG = SCALE > 0

/** The seed of every PRNG in the suite. */
export const SEED = (Number(process.env.ZARIS_FAULT_SEED ?? 20240601) >>> 0) || 1

/** `short` in the short run, `long * SCALE` (at least `short`) in the long one. */
export function count(short: number, long: number): number {
  return LONG ? Math.max(short, Math.round(long * SCALE)) : short
}

/** A test timeout that grows with the run. */
export function timeout(shortMs: number, longMs: number): number {
  return LONG ? Math.max(shortMs, Math.round(longMs * Math.max(1, SCALE))) : shortMs
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A seed derived from the suite's seed and a name, so tests do not share one stream. */
export function seedFor(name: string): number {
  let h = SEED ^ 0x9e3779b9
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0
  return h || 1
}

/** Quantiles of a sample, for the figures. */
export function quantiles(xs: number[]): { n: number; p50: number; p99: number; max: number; min: number } {
  const s = [...xs].sort((a, b) => a - b)
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN
  return { n: s.length, min: s[0] ?? NaN, p50: at(0.5), p99: at(0.99), max: s[s.length - 1] ?? NaN }
}

/**
 * Prints a figure (`[figure] name: ...`) and, when `ZARIS_FAULT_REPORT`
 * names a file, appends it there as a JSON line for RELIABILITY.md.
 */
export async function figure(name: string, data: Record<string, unknown>): Promise<void> {
  const text = Object.entries(data)
    .map(([k, v]) => `${k} ${typeof v === 'number' ? +v.toFixed(2) : JSON.stringify(v)}`)
    .join(', ')
  console.log(`[figure] ${name}: ${text} (seed ${SEED}, scale ${SCALE})`)
  const file = process.env.ZARIS_FAULT_REPORT
  if (file) {
    const { appendFileSync } = await import('node:fs')
    appendFileSync(file, JSON.stringify({ name, seed: SEED, scale: SCALE, ...data }) + '\n')
  }
}

/** Seeded choices for the fuzzers (test/faults/fuzz.ts, test/server/frames-fuzz.test.ts). */
export class Random {
  readonly next: () => number
  constructor(seed: number) {
    this.next = prng(seed)
  }
  int(n: number): number {
    return Math.floor(this.next() * n)
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!
  }
  chance(p: number): boolean {
    return this.next() < p
  }
  str(max = 12): string {
    const chars = 'abcdefghijklmnopqrstuvwxyz0123456789:_-/.'
    let s = ''
    for (let i = 1 + this.int(max); i > 0; i--) s += chars[this.int(chars.length)]
    return s
  }
  bytes(n: number): Uint8Array {
    const b = new Uint8Array(n)
    for (let i = 0; i < n; i++) b[i] = this.int(256)
    return b
  }
}
