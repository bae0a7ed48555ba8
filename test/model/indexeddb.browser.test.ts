/**
 * The model-based random test (test/model/scenario.ts) on the IndexedDB
 * adapter in real Chromium: every client its own connection and
 * BroadcastChannel, as separate tabs would have. Real time (the store's
 * clock is the page's wall clock); fast-check's scheduler reorders the
 * clients' store calls. 3 runs of each property (the browser project has no
 * fault scale).
 */
import { expect, test } from 'vitest'
import { indexedDbAdapter } from 'zaris/indexeddb'
import { assertScenarios, realEnvironment, realScenarios } from './scenario'

const runs = 3

test(`indexeddb: ${runs} random scenarios and ${runs} hold races: linearizable, and every hold's signal right`, async () => {
  const adapter = (namespace: string) => async () => indexedDbAdapter({ namespace })
  const id = Math.random().toString(36).slice(2, 8)
  const r = await assertScenarios(runs, realScenarios(), (scheduler, run) => realEnvironment(adapter(`model-${id}-${run}`), scheduler), 'i')
  const h = await assertScenarios(runs, realScenarios(true), (scheduler, run) => realEnvironment(adapter(`race-${id}-${run}`), scheduler), 'h')
  expect(r.operations + h.operations).toBeGreaterThan(runs * 5)
  console.log(`[figure] model test, indexeddb: ${r.runs + h.runs} runs, ${r.operations + h.operations} operations in ${Math.round(r.ms + h.ms)} ms`)
}, 120_000)
