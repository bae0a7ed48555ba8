/** Small helpers for the conformance suite; nothing here is Node-only. */
import { describe, test } from 'vitest'
import type { Adapter } from 'zaris'
import type { FixtureFactory, StoreFixture } from './fixture'

/**
 * How a case file registers its tests: vitest's `test` and `describe`
 * ({@link vitestCases}), or a collector that runs them itself (the bug
 * fixtures' runner, test/conformance/bugs). `weight`: how many ordinary
 * tests' time the test may take (1 unless said; the suite's `timeout` is
 * the time of weight 1).
 */
export interface Named {
  (name: string, fn: () => Promise<void>, weight?: number): void
  /** A group of tests. */
  group(name: string, body: () => void): void
}

/**
 * A test body throws this when what it checks does not apply to the store
 * (a capability the adapter does not declare, a hook the fixture does not
 * give): the test is reported as skipped with the reason, never as passed.
 */
export class NotChecked extends Error {
  constructor(readonly reason: string) {
    super(`not checked: ${reason}`)
    this.name = 'NotChecked'
  }
}

/** Ends the test as skipped, with `reason`. */
export function notChecked(reason: string): never {
  throw new NotChecked(reason)
}

/** What a suite run did, for the summary it prints. */
export class Tally {
  passed = 0
  failed = 0
  readonly skipped = new Map<string, number>()

  skip(reason: string): void {
    this.skipped.set(reason, (this.skipped.get(reason) ?? 0) + 1)
  }

  /** One line per outcome, and one per reason a test was skipped. */
  summary(name: string): string {
    const skipped = [...this.skipped.values()].reduce((a, b) => a + b, 0)
    const lines = [`conformance: ${name}: ${this.passed + this.failed + skipped} tests run, ${this.passed} passed, ${this.failed} failed, ${skipped} not checked (skipped)`]
    for (const [reason, n] of [...this.skipped].sort((a, b) => b[1] - a[1])) lines.push(`  ${n} x ${reason}`)
    return lines.join('\n')
  }
}

/**
 * The suite's tests as vitest tests: each test of weight `w` may take
 * `w * timeout` ms; a test named in `skips` is skipped with its reason; a
 * test that throws {@link NotChecked} is skipped with its reason. Every
 * outcome is counted in `tally`.
 */
export function vitestCases(options: { skips?: Array<{ reason: string; tests: string[] }>; timeout: number; tally: Tally }): Named {
  const reasons = new Map<string, string>()
  for (const s of options.skips ?? []) for (const name of s.tests) reasons.set(name, s.reason)
  const { tally, timeout } = options
  const t = ((name, fn, weight = 1) => {
    const reason = reasons.get(name)
    if (reason) {
      test.skip(`${name} [skipped: ${reason}]`, fn)
      tally.skip(reason)
      return
    }
    test(
      name,
      async (ctx) => {
        try {
          await fn()
        } catch (err) {
          if (err instanceof NotChecked) {
            tally.skip(err.reason)
            ctx.skip(err.reason)
          }
          tally.failed++
          throw err
        }
        tally.passed++
      },
      weight * timeout,
    )
  }) as Named
  t.group = (name, body) => describe(name, body)
  return t
}

/**
 * The message of an assertion that checks one rule of the contract: it
 * names the rule (`[rule new-life] …`), so a failure says which rule the
 * store broke. The rules are listed in docs/writing-an-adapter.md.
 */
export function rule(name: string, what: string): string {
  return `[rule ${name}] ${what}`
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Polls `cond` until it holds; throws after `timeout` ms so a test fails instead of hanging. */
export async function until(cond: () => boolean | Promise<boolean>, timeout = 5_000): Promise<void> {
  if (!(await eventually(cond, timeout))) throw new Error(`condition not met within ${timeout} ms`)
}

/**
 * Polls `cond` until it holds (true) or a look begun after `timeout` ms also
 * fails (false): for a check that reports what it saw instead. A look begun
 * before the deadline and answered after it does not decide (on a loaded
 * machine one slow round trip would otherwise span the whole window).
 */
export async function eventually(cond: () => boolean | Promise<boolean>, timeout: number): Promise<boolean> {
  const deadline = performance.now() + timeout
  for (;;) {
    const lookedAt = performance.now()
    if (await cond()) return true
    if (lookedAt > deadline) return false
    await sleep(5)
  }
}

/**
 * Polls until `done` holds (true), or `progress` stopped moving for two
 * seconds, or `timeout` ms passed (false): waiting for a stream that may
 * never finish, without waiting the whole timeout when it stalled.
 */
export async function settled(done: () => boolean, progress: () => number, timeout: number): Promise<boolean> {
  const deadline = performance.now() + timeout
  let last = progress()
  let movedAt = performance.now()
  while (!done()) {
    const now = performance.now()
    if (now > deadline || now - movedAt > 2_000) return false
    await sleep(10)
    if (progress() !== last) {
      last = progress()
      movedAt = performance.now()
    }
  }
  return true
}

/**
 * Blocks this thread for `ms` (no timer, no promise of this process runs
 * meanwhile): what follows sees a store that nothing in this process
 * touched since — no expiry timer of an in-process store fired.
 */
export function blockFor(ms: number): void {
  const end = performance.now() + ms
  while (performance.now() < end) {
    // Busy on purpose.
  }
}

/** Whether a list of numbers strictly rises, and how many distinct ones it has. */
export function collect(numbers: number[]): { increasing: boolean; unique: number } {
  return {
    increasing: numbers.every((n, i) => i === 0 || n > numbers[i - 1]!),
    unique: new Set(numbers).size,
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

/** A test body on a fresh store's raw adapter (and a way to open more adapters on the same store). */
export function onFreshAdapter(factory: FixtureFactory): (fn: (a: Adapter, another: () => Promise<Adapter>, f: StoreFixture) => Promise<void>) => () => Promise<void> {
  const withStore = onFreshStore(factory)
  return (fn) => withStore(async (f) => fn(await f.adapter(), () => f.adapter(), f))
}

/** A request id as every store takes it (the node's wire allows 8-128 letters, digits, _ and -). */
export function requestId(): string {
  return `conformance-${Math.random().toString(36).slice(2, 12)}`
}
