/**
 * zaris/otel on `zaris://idb` in Chromium: the same scenario as on the other
 * stores (./scenario.ts), with OpenTelemetry's SDK and its in-memory
 * exporters running in the page; and a watch's lag (./watch.ts: the page's
 * feed has no connection to break). A page observes its client itself,
 * `otel(...)(client)`: its `connect` hands the client to no telemetry.
 */
import { test } from 'vitest'
import { connect, type Client } from 'zaris'
import type { Telemetry } from 'zaris/otel'
import { otelScenario } from './scenario'
import { watchScenario } from './watch'

test('zaris://idb', async () => {
  const name = `otel-${Math.random().toString(36).slice(2, 8)}`
  await otelScenario(async (id, telemetry) => observed(await connect(`zaris://idb/${name}`, { id }), telemetry), 'indexeddb')
})

test('zaris://idb: watch lag', async () => {
  const name = `otel-watch-${Math.random().toString(36).slice(2, 8)}`
  await watchScenario(async (telemetry) => observed(await connect(`zaris://idb/${name}`), telemetry), 'indexeddb')
})

/** `client`, observed by `telemetry` as a page does it. */
function observed(client: Client, telemetry: Telemetry): Client {
  telemetry(client)
  return client
}
