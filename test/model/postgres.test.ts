/**
 * The model-based random test (test/model/scenario.ts) on the Postgres
 * adapter against a real Postgres, directly and through a real PgBouncer in
 * transaction mode. Real time; fast-check's scheduler reorders the clients'
 * store calls. A few runs in `npm test`, `ZARIS_FAULT_SCALE` x 40 in
 * `npm run test:faults`.
 */
import { expect, test } from 'vitest'
import { postgresAdapter } from 'zaris/postgres'
import { count, figure, timeout } from '../faults/scale'
import { postgresWithBouncer } from '../postgres/with-bouncer'
import { assertScenarios, realEnvironment, realScenarios } from './scenario'

const runs = count(2, 40)
const { server, bouncer } = postgresWithBouncer()

for (const via of ['postgres', 'pgbouncer'] as const) {
  test(`${via}: ${runs} random scenarios and ${runs} hold races: linearizable, and every hold's signal right`, async () => {
    const url = (ns: string) => (via === 'postgres' ? server().url(ns) : bouncer().url(ns))
    const adapter = (ns: string) => () => postgresAdapter({ url: url(ns) })
    const r = await assertScenarios(runs, realScenarios(), (scheduler, run) => realEnvironment(adapter(`model-${via}-${run}`), scheduler), 'r')
    const h = await assertScenarios(runs, realScenarios(true), (scheduler, run) => realEnvironment(adapter(`race-${via}-${run}`), scheduler), 'h')
    expect(r.operations + h.operations).toBeGreaterThan(runs * 5)
    await figure(`model test, ${via}`, { runs: r.runs + h.runs, operations: r.operations + h.operations, seconds: (r.ms + h.ms) / 1000 })
  }, timeout(180_000, 1_800_000))
}
