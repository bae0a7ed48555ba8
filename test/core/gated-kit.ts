/**
 * What the gated acquire's tests (test/core/gated*.test.ts) build on: the
 * memory store with a fake lock manager of this process in place of the
 * browser's Web Locks (./gated-store), on a ManualClock.
 */
import { expect } from 'vitest'
import { Client, systemClock, type Adapter, type Gate, type Lock, type WatchEvent } from 'zaris'
import { LOOK_AFTER } from '../../src/core/acquire/gated'
import { FakeLockManager, gatedStore } from './gated-store'
import { freshStore } from './machine-kit'

const closing: Array<() => unknown> = []
/** Closes what the last test opened (its `afterEach`). */
export async function closeAll(): Promise<void> {
  for (const c of closing.splice(0).reverse()) await c()
}

/** A gated memory store on a ManualClock: clients of it, a watch of `k` (`events`), the fake lock manager. */
export function setup() {
  const { clock, raw } = freshStore()
  const manager = new FakeLockManager()
  const store = gatedStore(raw, manager)
  const adapter = store.adapter()
  const marked = store.marked
  const client = (id: string, wrap: (a: Adapter) => Adapter = (a) => a) => {
    const c = new Client(wrap(store.adapter()), { id, clock })
    // A client the test closed itself is let be.
    closing.push(() => c.close().catch((err: unknown) => expect(err).toMatchObject({ code: 'CLOSED' })))
    return c
  }
  /** A client of the gated store that counts its own timers on the system clock (the store's TTLs stay on `clock`). */
  const systemClient = (id: string, wrap: (a: Adapter) => Adapter = (a) => a) => {
    const c = new Client(wrap(store.adapter()), { id, clock: systemClock })
    closing.push(() => c.close())
    return c
  }
  /** A client of the same store without gates (a store client that has no lock manager). */
  const plainClient = (id: string) => {
    const c = new Client(raw(), { id, clock })
    closing.push(() => c.close())
    return c
  }
  const events: WatchEvent[] = []
  void adapter.watch('k', { event: (ev) => events.push(ev), error: () => {} })
  closing.push(() => adapter.close())
  /** Lets a wait that was not granted at once look at the key and stand in line. */
  const queued = async () => {
    await tick()
    await clock.advance(LOOK_AFTER)
    await tick()
  }
  return { clock, adapter, marked, client, systemClient, plainClient, events, manager, queued }
}

/** The code of the reason a lock ended with. */
export const code = (lock: Lock) => (lock.signal.reason as { code?: string } | undefined)?.code

/** Lets pending promise chains run. */
export const tick = async (n = 20) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, 0))
}


/** `g` with some of its members replaced (a slow grant or steal: fakes, named so by the tests that use them). */
export function gateWith(g: Gate, over: { granted?: Promise<boolean>; steal?: () => Promise<void> }): Gate {
  return {
    key: g.key,
    mode: g.mode,
    granted: over.granted ?? g.granted,
    get held() {
      return g.held
    },
    steal: over.steal ?? (() => g.steal()),
    onLost: (fn) => g.onLost(fn),
    taken: () => g.taken(),
    release: () => g.release(),
  }
}

/** A step held back until the test lets it go (a fake delay): `arrived` once it came to `pass()`, `go()` lets it on. */
export function heldBack() {
  let arrive!: () => void
  let go!: () => void
  const arrived = new Promise<void>((r) => (arrive = r))
  const going = new Promise<void>((r) => (go = r))
  return {
    arrived,
    go,
    async pass(): Promise<void> {
      arrive()
      await going
    },
  }
}

/** An adapter whose takes of `k` through a gate wait at `step` first (a fake delay). */
export const slowTake =
  (step: ReturnType<typeof heldBack>) =>
  (inner: Adapter): Adapter => ({
    ...inner,
    async commit(checks, ops, options) {
      if (options?.gate && ops.some((o) => o.key === 'k' && o.type === 'set')) await step.pass()
      return inner.commit(checks, ops, options)
    },
  })

/**
 * A fake race: wraps a client's adapter so that its first read finding an
 * entry at `key` deletes that entry (through `store`) before it answers.
 * `fired` tells whether it happened.
 */
export function deletedOnFirstRead(store: Adapter, key: string) {
  const race = { fired: false }
  const wrap = (inner: Adapter): Adapter => ({
    ...inner,
    get: async (k) => {
      const e = await inner.get(k)
      if (!race.fired && k === key && e) {
        race.fired = true
        await store.commit([], [{ type: 'delete', key }])
        await tick()
      }
      return e
    },
  })
  return { race, wrap }
}

/** Whether `p` has settled, after pending chains ran (no time passes on the ManualClock). */
export async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false
  p.then(
    () => (done = true),
    () => (done = true),
  )
  await tick()
  return done
}
