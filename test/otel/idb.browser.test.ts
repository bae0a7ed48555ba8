/**
 * zaris/otel on `zaris://idb` in Chromium: the same scenario as on the other
 * stores (./scenario.ts), with OpenTelemetry's SDK and its in-memory
 * exporters running in the page; and a watch's lag (./watch.ts: the page's
 * feed has no connection to break).
 */
import { test } from 'vitest'
import { connect } from 'zaris'
import { otelScenario } from './scenario'
import { watchScenario } from './watch'

test('zaris://idb', async () => {
  const name = `otel-${Math.random().toString(36).slice(2, 8)}`
  await otelScenario((id, telemetry) => connect(`zaris://idb/${name}`, { id, telemetry }), 'indexeddb')
})

test('zaris://idb: watch lag', async () => {
  const name = `otel-watch-${Math.random().toString(36).slice(2, 8)}`
  await watchScenario((telemetry) => connect(`zaris://idb/${name}`, { telemetry }), 'indexeddb')
})
