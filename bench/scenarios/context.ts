/**
 * What every scenario gets from the runner.
 *
 * @module
 */

export interface BenchContext {
  /** Timed trials per contender (after one warm-up). */
  trials: number
  /** Shorter trials (BENCH_QUICK=1), for a fast look while developing. */
  quick: boolean
  /** Progress lines on stderr. */
  log(line: string): void
}
