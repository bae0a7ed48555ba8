/**
 * The model-based random test (test/model/scenario.ts) on a zaris node in
 * another process, over HTTP, in both modes: memory and `--data` (SQLite).
 * Real time (a ManualClock cannot drive another process); fast-check's
 * scheduler still reorders the clients' store calls. A few runs in
 * `npm test`, `ZARIS_FAULT_SCALE` x 40 in `npm run test:faults`.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { connect } from 'zaris'
import { startNode, type NodeProcess } from '../server/node-process'
import { count, figure, timeout } from '../faults/scale'
import { storeDir } from '../setup/store-dir'
import { assertScenarios, realEnvironment, realScenarios } from './scenario'

const runs = count(3, 40)
const dir = storeDir('zaris-model-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

for (const mode of ['memory', '--data'] as const) {
  describe(`node (${mode})`, () => {
    let node: NodeProcess
    beforeAll(async () => {
      node = await startNode(mode === '--data' ? ['--data', join(dir, 'store.db')] : [])
    })
    afterAll(async () => {
      await node?.stop()
    })

    test(`${runs} random scenarios: linearizable, and every hold's signal right`, async () => {
      const adapter = (ns: string) => async () => (await connect(`zaris://127.0.0.1:${node.port}/${ns}`)).adapter
      const r = await assertScenarios(runs, realScenarios(), (scheduler, run) => realEnvironment(adapter(`model-${run}`), scheduler), 'n')
      const h = await assertScenarios(runs, realScenarios(true), (scheduler, run) => realEnvironment(adapter(`race-${run}`), scheduler), 'h')
      expect(r.operations + h.operations).toBeGreaterThan(runs * 5)
      await figure(`model test, node ${mode}`, { runs: r.runs + h.runs, operations: r.operations + h.operations, seconds: (r.ms + h.ms) / 1000 })
    }, timeout(120_000, 1_200_000))
  })
}
