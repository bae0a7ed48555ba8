/**
 * How `connect` picks a client's telemetry in Node: providers registered
 * with `@opentelemetry/api`, providers given, `telemetry: false` for none;
 * and, where `@opentelemetry/api` is not installed, no telemetry and no
 * failure (a process whose resolver cannot find it: ./fixtures/no-otel-api.mjs).
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { metrics, trace } from '@opentelemetry/api'
import type { Histogram } from '@opentelemetry/sdk-metrics'
import { expect, test } from 'vitest'
import { connect } from 'zaris'
import { root } from '../readme/snippets'
import { sdk } from './scenario'

const run = promisify(execFile)

async function acquireRelease(options: Parameters<typeof connect>[1]): Promise<void> {
  const client = await connect(`zaris://inproc/otel-connect-${Math.random().toString(36).slice(2)}`, options)
  await (await client.locks.acquire('lock:a'))!.release()
  await client.close()
}

test('connect records to the providers registered with @opentelemetry/api, to those given, and to none with telemetry: false', async () => {
  const registered = sdk()
  const waits = async (s: ReturnType<typeof sdk>) => (await s.points<Histogram>('zaris.acquire.duration')).reduce((n, p) => n + p.value.count, 0)
  await acquireRelease({}) // nothing registered: nothing recorded anywhere
  expect(metrics.setGlobalMeterProvider(registered.meterProvider)).toBe(true)
  expect(trace.setGlobalTracerProvider(registered.tracerProvider)).toBe(true)
  try {
    await acquireRelease({})
    await acquireRelease({ telemetry: false })
    expect(await waits(registered)).toBe(1)
    expect(registered.spans().map((s) => s.name).sort()).toEqual(['zaris.acquire', 'zaris.commit', 'zaris.commit', 'zaris.release'])
    const given = sdk()
    await acquireRelease({ meterProvider: given.meterProvider })
    expect(await waits(given)).toBe(1)
    expect(await waits(registered)).toBe(1)
  } finally {
    metrics.disable()
    trace.disable()
  }
})

test('without @opentelemetry/api installed, connect and a lock work as ever', async () => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--import', './test/otel/fixtures/no-otel-api.mjs', 'test/otel/fixtures/without-api.ts'], { cwd: root })
  expect(JSON.parse(stdout)).toEqual({ api: 'ERR_MODULE_NOT_FOUND', token: 1, released: true })
}, 30_000)
