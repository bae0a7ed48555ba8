/**
 * The model-based random test on the memory store (test/model/scenario.ts):
 * fast-check's scheduler interleaves every store call of 2-3 clients and the
 * clock's steps (a ManualClock, so expiry and deadlines are exact), some
 * answers are lost; each history is checked for linearizability, the
 * observer's watch and every hold's signal. On failure fast-check prints the
 * seed and path (rerun with ZARIS_MODEL_SEED / ZARIS_MODEL_PATH) and the
 * shrunk scenario with its report.
 */
import fc from 'fast-check'
import { expect, test } from 'vitest'
import { ManualClock } from 'zaris/testing'
import { memoryAdapter } from 'zaris/memory'
import { runParameters, runScenario, scenarioArbitrary, type Environment } from './scenario'

import { count } from '../faults/scale'

/** About 0.1 s a run (the ManualClock lets timers settle on real macrotask turns). */
const runs = Number(process.env.ZARIS_MODEL_RUNS ?? count(60, 1_000))

const memoryEnvironment = (scheduler: fc.Scheduler, namespace: string): Environment => {
  const clock = new ManualClock(1_000)
  return {
    adapter: async () => memoryAdapter({ namespace, clock }),
    clock,
    now: () => clock.now(),
    advance: (ms) => clock.advance(ms),
    scheduler,
    settle: () => clock.advance(0),
    tolerance: 0,
    slack: 0,
  }
}

test(`memory store: ${runs} random scenarios of concurrent clients, interleaved by fast-check, linearizable and every hold's signal right`, async () => {
  let n = 0
  let operations = 0
  const started = performance.now()
  await fc.assert(
    fc.asyncProperty(fc.scheduler(), scenarioArbitrary({ clients: 3, commands: 8, ttl: [50, 300] }), async (scheduler, scenario) => {
      const outcome = await runScenario(scenario, memoryEnvironment(scheduler, `model-${n++}`), `r${n}`)
      operations += outcome.operations
      if (!outcome.ok) throw new Error(`${outcome.report}\n${scheduler.report().length} scheduled steps`)
    }),
    runParameters(runs),
  )
  console.log(`[figure] model test, memory store: ${n} runs, ${operations} operations checked in ${Math.round(performance.now() - started)} ms`)
  expect(operations).toBeGreaterThan(runs * 5)
}, 300_000)

test(`memory store: ${runs} races of two clients on one lock (steal, renew, release, fenced writes)`, async () => {
  let n = 0
  await fc.assert(
    fc.asyncProperty(fc.scheduler(), scenarioArbitrary({ clients: 2, commands: 6, ttl: [100, 300], holdsOnly: true }), async (scheduler, scenario) => {
      const outcome = await runScenario(scenario, memoryEnvironment(scheduler, `race-${n++}`), `h${n}`)
      if (!outcome.ok) throw new Error(`${outcome.report}\n${scheduler.report().length} scheduled steps`)
    }),
    runParameters(runs),
  )
}, 300_000)
