/**
 * The model-based random test (test/model/scenario.ts) on the `file://`
 * store: each client a connection of its own to one SQLite file, as each
 * process of the machine has. Real time; fast-check's scheduler reorders the
 * clients' store calls. A few runs in `npm test`, `ZARIS_FAULT_SCALE` x 40
 * in `npm run test:faults`. Histories of clients in separate processes,
 * killed at random, are checked in test/faults/file.test.ts.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { fileAdapter } from 'zaris/file'
import { count, figure, timeout } from '../faults/scale'
import { storeDir } from '../setup/store-dir'
import { assertScenarios, realEnvironment, realScenarios } from './scenario'

const dir = storeDir('zaris-model-file-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const runs = count(3, 40)

test(`file://: ${runs} random scenarios and ${runs} hold races: linearizable, and every hold's signal right`, async () => {
  const adapter = (ns: string) => () => fileAdapter({ path: join(dir, 'model.db'), namespace: ns })
  const r = await assertScenarios(runs, realScenarios(), (scheduler, run) => realEnvironment(adapter(`model-${run}`), scheduler), 'r')
  const h = await assertScenarios(runs, realScenarios(true), (scheduler, run) => realEnvironment(adapter(`race-${run}`), scheduler), 'h')
  expect(r.operations + h.operations).toBeGreaterThan(runs * 5)
  await figure('model test, file://', { runs: r.runs + h.runs, operations: r.operations + h.operations, seconds: (r.ms + h.ms) / 1000 })
}, timeout(120_000, 1_200_000))
