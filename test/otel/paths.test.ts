/**
 * zaris/otel sees every way a client takes and ends a hold, through the
 * methods it wraps from outside (src/otel/observer.ts): `locks.run`,
 * `semaphores.run`, a lock set, `jobs.once`, `await using`, a renewal, and
 * `client.close()`; on a client made from an adapter and observed with
 * `otel(...)(client)`, as a page does it.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { context, ROOT_CONTEXT, type Context, type ContextManager } from '@opentelemetry/api'
import type { Histogram } from '@opentelemetry/sdk-metrics'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { Client } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { otel } from 'zaris/otel'
import { sdk } from './scenario'

/**
 * The active span carried across `await`, as the SDK's async-hooks context
 * manager does it (Node's AsyncLocalStorage; that package is not installed here).
 */
class StoreContextManager implements ContextManager {
  readonly #store = new AsyncLocalStorage<Context>()
  active(): Context {
    return this.#store.getStore() ?? ROOT_CONTEXT
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.#store.run(ctx, () => fn.apply(thisArg, args))
  }
  bind<T>(_ctx: Context, target: T): T {
    return target
  }
  enable(): this {
    return this
  }
  disable(): this {
    this.#store.disable()
    return this
  }
}
beforeAll(() => void context.setGlobalContextManager(new StoreContextManager()))
afterAll(() => context.disable())

test('run, a permit, a lock set, a job, await using, a renewal and close are each seen once', async () => {
  const otelSdk = sdk()
  const client = new Client(memoryAdapter({ namespace: `otel-paths-${Math.random().toString(36).slice(2, 8)}` }))
  otel({ meterProvider: otelSdk.meterProvider, tracerProvider: otelSdk.tracerProvider })(client)
  otel({ meterProvider: sdk().meterProvider })(client) // a second telemetry is not taken: nothing counts twice
  expect(await client.locks.run('lock:run', async (lock) => lock!.held)).toBe(true)
  expect(await client.semaphores.run('sem:otel', { limit: 2 }, async (permit) => permit!.held)).toBe(true)
  expect(await (await client.locks.acquire(['lock:x', 'lock:y']))!.release()).toBe(true)
  expect(await client.jobs.once('job:otel', 'slot-1', async () => 'ran')).toMatchObject({ status: 'ran' })
  {
    await using used = (await client.locks.acquire('lock:using'))!
    expect(await used.renew()).toBe(true)
  }
  const left = (await client.locks.acquire('lock:left'))!
  await client.close()
  expect(left.held).toBe(false)

  const endedBy = async (reason: string) => (await otelSdk.points('zaris.hold.ended')).filter((p) => p.attributes['zaris.hold.end_reason'] === reason).reduce((n, p) => n + p.value, 0)
  // run, the permit, the set's two locks, the job's lock, await using: released; the one left: closed.
  expect(await endedBy('released')).toBe(6)
  expect(await endedBy('closed')).toBe(1)
  expect((await otelSdk.points('zaris.hold.active')).reduce((n, p) => n + p.value, 0)).toBe(0)
  const waits = await otelSdk.points<Histogram>('zaris.acquire.duration')
  const held = (kind: string) => waits.filter((p) => p.attributes['zaris.hold.kind'] === kind && p.attributes['zaris.acquire.outcome'] === 'held').reduce((n, p) => n + p.value.count, 0)
  expect({ lock: held('lock'), locks: held('locks'), permit: held('permit') }).toEqual({ lock: 4, locks: 1, permit: 1 })
  const renewals = await otelSdk.points('zaris.hold.renewals')
  expect(renewals.map((p) => [p.attributes['zaris.renewal.outcome'], p.value])).toEqual([['ok', 1]])
  const releases = otelSdk.spans().filter((s) => s.name === 'zaris.release')
  expect(releases).toHaveLength(7)
  expect(releases.every((s) => s.attributes['zaris.release.outcome'] === 'released')).toBe(true)
  // Each release's delete is its child: the release is the active span while it commits.
  const commits = otelSdk.spans().filter((s) => s.name === 'zaris.commit')
  for (const r of releases) expect(commits.some((c) => c.parentSpanContext?.spanId === r.spanContext().spanId)).toBe(true)
  await otelSdk.shutdown()
})

test('a frozen adapter of your own is left as it is: its commits go untimed, the rest is observed', async () => {
  const otelSdk = sdk()
  const client = new Client(Object.freeze(memoryAdapter({ namespace: `otel-frozen-${Math.random().toString(36).slice(2, 8)}` })))
  otel({ meterProvider: otelSdk.meterProvider })(client)
  expect(await (await client.locks.acquire('lock:a'))!.release()).toBe(true)
  await client.close()
  expect(await otelSdk.points('zaris.commit.duration')).toEqual([])
  expect((await otelSdk.points<Histogram>('zaris.acquire.duration')).map((p) => p.value.count)).toEqual([1])
  await otelSdk.shutdown()
})
