/**
 * Everything the checker knows how to judge in one history: linearizability
 * of its operations (check.ts) and its watches (watch.ts), with one report.
 *
 * @module
 */
import { checkHistory, formatResult, type CheckOptions, type CheckResult } from './check'
import { pairHistory, type HistoryEvent } from './history'
import { checkWatches, type WatchViolation } from './watch'

export interface Verdict {
  ok: boolean
  linearizability: CheckResult
  watch: { violations: WatchViolation[]; events: number }
  report: string
}

/** Checks a history; `report` says what failed, with the operations involved. */
export function verifyHistory(history: readonly HistoryEvent[], options: CheckOptions = {}): Verdict {
  const linearizability = checkHistory(history, options)
  const { operations, standalone } = pairHistory(history)
  const watch = checkWatches(standalone, operations)
  const lines = [formatResult(linearizability)]
  lines.push(`watch: ${watch.events} events, ${watch.violations.length} violation(s)`)
  for (const v of watch.violations.slice(0, 10)) lines.push(`  ${v.kind}: ${v.message}`)
  return { ok: linearizability.verdict === 'ok' && watch.violations.length === 0, linearizability, watch, report: lines.join('\n') }
}
