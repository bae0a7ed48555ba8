/**
 * The checker at the size the issue asks: 10 000 operations of 16 clients
 * over 4 locks (each with 2 fenced keys), plus counters and plain keys,
 * 1% of the answers lost. It must decide in seconds; the figure is printed
 * (and copied to RELIABILITY.md). The same history with one grant doubled
 * must be found not linearizable, as fast.
 */
import { expect, test } from 'vitest'
import { checkHistory, formatResult } from './check'
import type { HistoryEvent } from './history'
import { simulate } from './simulate'

const options = { operations: 10_000, clients: 16, locks: 4, fencedKeys: 2, unknownRate: 0.01, seed: 12 }

test('10 000 operations, 16 clients, 4 locks with fenced keys, 1% unknown outcomes: decided in seconds', () => {
  const history = simulate(options)
  const result = checkHistory(history)
  expect(result.verdict, formatResult(result)).toBe('ok')
  expect(result.operations).toBe(options.operations)
  expect(result.unknownOutcome).toBeGreaterThan(50)
  const lockPartitions = result.partitions.filter((p) => p.keys.some((k) => k.startsWith('lock:')))
  expect(lockPartitions.length).toBe(options.locks)
  const steps = result.partitions.reduce((n, p) => n + p.steps, 0)
  console.log(`[figure] checker: ${result.operations} operations (${result.unknownOutcome} unknown), ${result.partitions.length} partitions, ${steps} search steps: linearizable in ${Math.round(result.ms)} ms`)

  // One grant doubled: another client granted the same lock in the same instant.
  const grant = history.findIndex((e) => e.type === 'ok' && e.f === 'commit' && (e.value as { entries?: Array<{ owner?: string }> }).entries?.[0]?.owner !== undefined)
  const completion = history[grant]!
  const invoke = history.slice(0, grant).reverse().find((e) => e.process === completion.process && e.type === 'invoke')!
  const input = invoke.value as { checks: unknown[]; ops: Array<{ key: string; ttl: number }> }
  const lock = input.ops[0]!.key
  const token = 1e9
  const doubled: HistoryEvent[] = [
    ...history,
    { process: 10_000, type: 'invoke', f: 'commit', value: { checks: [{ key: lock, revision: null }], ops: [{ ...input.ops[0], owner: 'intruder' }] }, time: invoke.time, client: 'intruder' },
    { process: 10_000, type: 'ok', f: 'commit', value: { revision: token, entries: [{ key: lock, value: null, revision: token, created: token, owner: 'intruder', ttl: input.ops[0]!.ttl }], deleted: [] }, time: completion.time, client: 'intruder' },
  ]
  const bad = checkHistory(doubled)
  expect(bad.verdict).toBe('violation')
  const report = formatResult(bad)
  expect(report).toMatch(new RegExp(`smallest: keys ${lock}`))
  console.log(`[figure] checker: the same history with one grant doubled: not linearizable, found in ${Math.round(bad.ms)} ms`)
}, 60_000)
