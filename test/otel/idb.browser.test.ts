/**
 * zaris/otel on `zaris://idb` in Chromium: the same scenario as on the other
 * stores (./scenario.ts), with OpenTelemetry's SDK and its in-memory
 * exporters running in the page.
 */
import { test } from 'vitest'
import { connect } from 'zaris'
import { otelScenario } from './scenario'

test('zaris://idb', async () => {
  const name = `otel-${Math.random().toString(36).slice(2, 8)}`
  await otelScenario((id, telemetry) => connect(`zaris://idb/${name}`, { id, telemetry }), 'indexeddb')
})
