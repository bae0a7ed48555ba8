/**
 * What zaris/otel costs per acquire + release of one lock on `zaris://inproc`:
 * three clients in one process, taking turns trial by trial — no telemetry,
 * metrics (OpenTelemetry's SDK MeterProvider with a reader nobody reads),
 * and metrics + spans (a BasicTracerProvider whose exporter drops what it is
 * given, so that only zaris's share and the SDK's own are measured) — and
 * printing one JSON line: ops/s and CPU µs per op of each (medians), and
 * the µs each adds per acquire + release.
 *
 *   npx tsx bench/tools/otel-cost.ts [trials=7] [ms per trial=400]
 *   node --cpu-prof --import tsx bench/tools/otel-cost.ts --loop metrics 5   # one client's cycle, for a profile
 *
 * @module
 */
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base'
import { connect, type Client } from 'zaris'
import { otel } from 'zaris/otel'
import { loop, median } from '../lib/measure'

class Unread extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}
const dropped: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} }
const meterProvider = new MeterProvider({ readers: [new Unread()] })
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(dropped)] })

const clients: Record<string, Client> = {
  none: await connect('zaris://inproc/bench-otel-none', { telemetry: false }),
  metrics: await connect('zaris://inproc/bench-otel-metrics', { telemetry: otel({ meterProvider }) }),
  spans: await connect('zaris://inproc/bench-otel-spans', { telemetry: otel({ meterProvider, tracerProvider }) }),
}
const cycle = (client: Client) => async () => {
  const lock = await client.locks.acquire('lock:bench', { ttl: 30_000 })
  if (!lock) throw new Error('the bench lock was not free')
  await lock.release()
}
if (process.argv[2] === '--loop') {
  const name = process.argv[3] ?? 'metrics'
  const t = await loop(cycle(clients[name]!), Number(process.argv[4] ?? 5) * 1000)
  console.log(JSON.stringify({ [name]: Math.round((t.ops / t.ms) * 1000) }))
  process.exit(0)
}
const trials = Number(process.argv[2] ?? 7)
const dur = Number(process.argv[3] ?? 400)
const rate: Record<string, number[]> = { none: [], metrics: [], spans: [] }
const cpu: Record<string, number[]> = { none: [], metrics: [], spans: [] }
for (const c of Object.values(clients)) await loop(cycle(c), 200)
for (let i = 0; i < trials; i++) {
  for (const [name, client] of Object.entries(clients)) {
    const before = process.cpuUsage()
    const t = await loop(cycle(client), dur)
    const used = process.cpuUsage(before)
    rate[name]!.push((t.ops / t.ms) * 1000)
    cpu[name]!.push((used.user + used.system) / t.ops)
  }
}
const us = (name: string) => 1e6 / median(rate[name]!)
console.log(
  JSON.stringify({
    opsPerSec: Object.fromEntries(Object.keys(rate).map((n) => [n, Math.round(median(rate[n]!))])),
    cpuUsPerOp: Object.fromEntries(Object.keys(cpu).map((n) => [n, +median(cpu[n]!).toFixed(2)])),
    addedUsPerOp: { metrics: +(us('metrics') - us('none')).toFixed(2), spans: +(us('spans') - us('none')).toFixed(2) },
  }),
)
await Promise.all(Object.values(clients).map((c) => c.close()))
await Promise.all([meterProvider.shutdown(), tracerProvider.shutdown()])
