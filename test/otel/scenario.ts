/**
 * One run of a client's life through zaris/otel, against OpenTelemetry's own
 * SDK with its in-memory exporters, for any store (Node and a page): waits
 * of every outcome (held, null, timeout, aborted), holds ended by release, a
 * steal and a TTL expiry (also seen as `holdend` events), a renewal, an
 * election's term; then it reads the metrics and spans the SDK exported.
 */
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type DataPoint, type Histogram, type ResourceMetrics } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { expect } from 'vitest'
import type { Client, HoldEndDetail } from 'zaris'
import { otel, type Telemetry } from 'zaris/otel'

/** The SDK as an app sets it up, with in-memory exporters. */
export function sdk() {
  const metrics = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({ exporter: metrics, exportIntervalMillis: 3_600_000 })
  const meterProvider = new MeterProvider({ readers: [reader] })
  const spans = new InMemorySpanExporter()
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] })
  return {
    meterProvider,
    tracerProvider,
    spans: (): ReadableSpan[] => spans.getFinishedSpans(),
    /** Every data point of metric `name`, as last exported (a flush exports now). */
    async points<T = number>(name: string): Promise<Array<DataPoint<T>>> {
      await reader.forceFlush()
      const last: ResourceMetrics | undefined = metrics.getMetrics().at(-1)
      const found = last?.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name)
      return (found?.dataPoints ?? []) as Array<DataPoint<T>>
    },
    async shutdown() {
      await Promise.all([meterProvider.shutdown(), tracerProvider.shutdown()])
    },
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function until(what: string, ok: () => boolean, ms = 5_000): Promise<void> {
  const end = performance.now() + ms
  while (!ok()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

/** Runs the scenario on clients `make` connects (with the telemetry given) and checks what was exported; `store` is the expected `zaris.store`. */
export async function otelScenario(make: (id: string, telemetry: Telemetry) => Promise<Client>, store: string): Promise<void> {
  const otelSdk = sdk()
  const telemetry = () => otel({ meterProvider: otelSdk.meterProvider, tracerProvider: otelSdk.tracerProvider })
  const a = await make('a', telemetry())
  const b = await make('b', telemetry())
  const lost: HoldEndDetail[] = []
  a.addEventListener('holdend', (e) => lost.push(e.detail))
  try {
    // Waits of every outcome.
    const first = (await a.locks.acquire('lock:otel', { ttl: 10_000 }))!
    expect(await b.locks.acquire('lock:otel')).toBeNull()
    expect(await b.locks.acquire('lock:otel', { wait: 150 })).toBeNull()
    const stop = new AbortController()
    setTimeout(() => stop.abort(new Error('gave up')), 100)
    await expect(b.locks.acquire('lock:otel', { wait: 10_000, signal: stop.signal })).rejects.toThrow('gave up')
    const waited = b.locks.acquire('lock:otel', { wait: 10_000 })
    setTimeout(() => void first.release(), 200)
    expect(await (await waited)!.release()).toBe(true)

    // A steal, a TTL expiry and a renewal.
    const stolen = (await a.locks.acquire('lock:steal', { ttl: 10_000 }))!
    void stolen.signal // watch the key: the steal ends the hold when its event comes
    const thief = (await b.locks.acquire('lock:steal', { steal: true }))!
    await until('the steal to end the hold', () => !stolen.held)
    const lapsed = (await a.locks.acquire('lock:ttl', { ttl: 250, autoRenew: false }))!
    await until('the TTL to pass', () => !lapsed.held)
    const renewed = (await a.leases.grant('presence:a', { ttl: 600, value: 'here' }))!
    await sleep(350)
    expect(await renewed.revoke()).toBe(true)
    await thief.release()

    // An election's term.
    const election = a.election('leader:otel', { ttl: 5_000 })
    await election.campaign()
    await election.resign()

    expect(lost.map((d) => [d.key, d.reason.code])).toEqual([['lock:steal', 'STOLEN'], ['lock:ttl', 'EXPIRED']])
    expect(lost.map((d) => d.token)).toEqual([stolen.token, lapsed.token])
  } finally {
    await Promise.all([a.close(), b.close()])
  }

  // The wait histogram, by outcome.
  const waits = await otelSdk.points<Histogram>('zaris.acquire.duration')
  const wait = (outcome: string, kind = 'lock') => waits.find((p) => p.attributes['zaris.acquire.outcome'] === outcome && p.attributes['zaris.hold.kind'] === kind)?.value
  for (const p of waits) expect(p.attributes['zaris.store']).toBe(store)
  expect(wait('held')!.count).toBe(5) // first, waited, stolen, thief, lapsed
  expect(wait('null')!.count).toBe(1)
  expect(wait('timeout')!.count).toBe(1)
  expect(wait('timeout')!.sum).toBeGreaterThanOrEqual(0.14)
  expect(wait('aborted')!.count).toBe(1)
  expect(wait('held', 'term')!.count).toBe(1)
  expect(wait('held', 'lease')!.count).toBe(1)
  // The longest held wait is the one that waited for the release (~200 ms).
  expect(wait('held')!.max).toBeGreaterThanOrEqual(0.15)

  // Holds ended, by reason.
  const ended = await otelSdk.points('zaris.hold.ended')
  const endedBy = (reason: string) => ended.filter((p) => p.attributes['zaris.hold.end_reason'] === reason).reduce((n, p) => n + p.value, 0)
  expect({ released: endedBy('released'), stolen: endedBy('stolen'), expired: endedBy('expired'), lost: endedBy('lost') }).toEqual({ released: 5, stolen: 1, expired: 1, lost: 0 })
  const held = await otelSdk.points<Histogram>('zaris.hold.duration')
  const expired = held.find((p) => p.attributes['zaris.hold.end_reason'] === 'expired')!.value
  expect(expired.count).toBe(1)
  expect(expired.sum).toBeGreaterThanOrEqual(0.2) // held until its deadline (250 ms less the drift margin)
  const active = await otelSdk.points('zaris.hold.active')
  expect(active.reduce((n, p) => n + p.value, 0)).toBe(0)

  // Renewals, commits, terms.
  const renewals = await otelSdk.points('zaris.hold.renewals')
  expect(renewals.find((p) => p.attributes['zaris.renewal.outcome'] === 'ok')?.value).toBeGreaterThanOrEqual(1)
  const commits = await otelSdk.points<Histogram>('zaris.commit.duration')
  expect(commits.every((p) => p.attributes['zaris.store'] === store)).toBe(true)
  expect(commits.find((p) => p.attributes['zaris.commit.outcome'] === 'ok')!.value.count).toBeGreaterThanOrEqual(10)
  expect(commits.find((p) => p.attributes['zaris.commit.outcome'] === 'conflict')!.value.count).toBeGreaterThanOrEqual(1)
  expect((await otelSdk.points('zaris.election.terms'))[0]!.value).toBe(1)

  // Spans: the acquire with its attributes, commits, releases.
  const spans = otelSdk.spans()
  const acquires = spans.filter((s) => s.name === 'zaris.acquire')
  expect(acquires).toHaveLength(10) // five for lock:otel; stolen, thief, lapsed; the lease; the term
  const firstSpan = acquires[0]!
  expect(firstSpan.attributes).toMatchObject({ 'zaris.key': 'lock:otel', 'zaris.store': store, 'zaris.hold.kind': 'lock', 'zaris.lock.mode': 'exclusive', 'zaris.acquire.outcome': 'held', 'zaris.acquire.wait_ms': 0 })
  expect(firstSpan.attributes['zaris.token']).toEqual(expect.any(Number))
  const aborted = acquires.find((s) => s.attributes['zaris.acquire.outcome'] === 'aborted')!
  expect(aborted.status.code).toBe(2)
  expect(aborted.attributes['error.type']).toBe('Error')
  expect(spans.filter((s) => s.name === 'zaris.release').map((s) => s.attributes['zaris.key'])).toContain('lock:otel')
  const commit = spans.find((s) => s.name === 'zaris.commit')!
  expect(commit.kind).toBe(2) // CLIENT
  expect(commit.attributes).toMatchObject({ 'zaris.store': store, 'db.operation.name': 'commit' })
  await otelSdk.shutdown()
}
