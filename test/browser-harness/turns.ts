/**
 * What every "tabs of two kinds take turns on one key" test checks once its
 * rounds are done (test/tabs/tabs.test.ts, test/elect/tabs.test.ts): each
 * tab's holds recorded, tokens rising hold after hold, each hold begun after
 * the one before it was let go, and the checker's verdict on the history.
 */
import { expect } from 'vitest'
import type { HistoryEvent } from '../lincheck/history'
import { assertHistory, type HistoryRecord } from '../faults/checker'

type Acquired = Extract<HistoryRecord, { type: 'acquire' }>

/** Asserts the turns of `holds` recorded holds; returns them in order and how often the kind of holder (`kind-i` ids) changed. */
export function assertTurns(records: readonly HistoryRecord[], operations: readonly HistoryEvent[], holds: number): { acquired: Acquired[]; switches: number } {
  const acquired = records.filter((r): r is Acquired => r.type === 'acquire').sort((a, b) => a.at - b.at)
  const released = new Map(records.filter((r) => r.type === 'release').map((r) => [(r as { token: number }).token, r as { invokedAt: number }]))
  expect(acquired).toHaveLength(holds)
  for (let k = 1; k < acquired.length; k++) {
    expect(acquired[k]!.token).toBeGreaterThan(acquired[k - 1]!.token)
    expect(acquired[k]!.at).toBeGreaterThan(released.get(acquired[k - 1]!.token)!.invokedAt)
  }
  const kind = (a: Acquired) => a.client.split('-')[0]
  const switches = acquired.filter((a, k) => k > 0 && kind(a) !== kind(acquired[k - 1]!)).length
  const stats = assertHistory(records, operations, { clockMargin: 5 })
  // Each hold is at least its take and its fenced write.
  expect(stats.operations).toBeGreaterThan(2 * holds)
  return { acquired, switches }
}
