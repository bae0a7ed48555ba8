/** Small helpers for the conformance suite; nothing here is Node-only. */
import { test } from 'vitest'
import type { Adapter } from 'zaris'
import type { FixtureFactory, StoreFixture } from './fixture'

/** `test` or a wrapper of it that skips named tests with a reason. */
export type Named = (name: string, fn: () => Promise<void>, timeout?: number) => void

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Polls `cond` until it holds; throws after `timeout` ms so a test fails instead of hanging. */
export async function until(cond: () => boolean | Promise<boolean>, timeout = 5_000): Promise<void> {
  const deadline = Date.now() + timeout
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeout} ms`)
    await sleep(5)
  }
}

/** Whether a list of numbers strictly rises, and how many distinct ones it has. */
export function collect(numbers: number[]): { increasing: boolean; unique: number } {
  return {
    increasing: numbers.every((n, i) => i === 0 || n > numbers[i - 1]!),
    unique: new Set(numbers).size,
  }
}

/** Builds the `test` a suite uses, skipping the named tests with their reason. */
export function namedTest(skips: Array<{ reason: string; tests: string[] }> = []): Named {
  const reasons = new Map<string, string>()
  for (const s of skips) for (const name of s.tests) reasons.set(name, s.reason)
  return (name, fn, timeout) => {
    const reason = reasons.get(name)
    if (reason) test.skip(`${name} [skipped: ${reason}]`, fn)
    else test(name, fn, timeout)
  }
}

/**
 * How late (ms) a store may free an entry after its TTL: its declared
 * `capabilities.ttlGranularity` (1 ms unless declared; etcd's leases count
 * whole seconds). Expiry cases wait this much longer.
 */
export function late(store: Adapter | { adapter: Adapter }): number {
  const adapter = 'adapter' in store ? store.adapter : store
  return adapter.capabilities?.ttlGranularity ?? 1
}

/** A test body on a fresh store of `factory`, closed after the test whatever happens. */
export function onFreshStore(factory: FixtureFactory): (fn: (f: StoreFixture) => Promise<void>) => () => Promise<void> {
  return (fn) => async () => {
    const fixture = await factory()
    try {
      await fn(fixture)
    } finally {
      await fixture.close()
    }
  }
}
