/**
 * What the acquire machine's tests build on: a client context over the real
 * memory store on a ManualClock, and two wrappers of that store for what a
 * test must stage — a commit held at a gate until the test lets it go (a
 * fake delay, named so), and a store that says a named owner's client is
 * gone (a fake `ownerGone`, as IndexedDB's would say for a closed tab).
 * It also counts the watches open on the store, so that a test can see that
 * a wait leaves none behind.
 */
import type { Adapter, Check, Op } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { ManualClock } from 'zaris/testing'
import type { Context } from '../../src/core/context'
import { ClosedError } from '../../src/core/contract/errors'

/** A client context as `Client` builds one, for driving core modules directly. */
export function contextOf(adapter: Adapter, clock: ManualClock, id: string): Context & { close(): void } {
  const onClose = new Set<(reason: Error) => void>()
  let closed = false
  return {
    adapter,
    clock,
    id,
    ttl: 30_000,
    ready: Promise.resolve(),
    open: new Set(),
    lost() {}, // the client's `holdend` event: none here
    onClose(fn) {
      if (closed) {
        fn(new ClosedError())
        return () => {}
      }
      onClose.add(fn)
      return () => onClose.delete(fn)
    },
    assertOpen() {
      if (closed) throw new ClosedError()
    },
    close() {
      closed = true
      for (const fn of onClose) fn(new ClosedError())
    },
  }
}

type Match = (checks: Check[], ops: Op[]) => boolean

/** A commit held at a gate: `arrived` once it reached it, `open()` lets it on to the store. */
export interface Gate {
  arrived: Promise<void>
  open(): void
}

/** `inner.watch`, counting the watches open on it: a test sees that a wait or a hold leaves none behind. */
export function countedWatches(inner: Pick<Adapter, 'watch'>) {
  let open = 0
  return {
    async watch(...args: Parameters<Adapter['watch']>): ReturnType<Adapter['watch']> {
      const unwatch = await inner.watch(...args)
      open++
      let done = false
      return () => {
        if (!done) open--
        done = true
        unwatch()
      }
    },
    open: () => open,
  }
}

/** The memory store with commits that can be held before they reach it (fake delays), and `ownerGone` for owners the test names dead (a fake). */
export function staged(inner: Adapter) {
  const gates: Array<{ match: Match; reached(): void; wait: Promise<void> }> = []
  const dead = new Map<string, () => void>()
  const deadNow = new Set<string>()
  let failWatches = false
  const watches = countedWatches(inner)
  const adapter: Adapter = {
    name: 'memory (staged: held commits and ownerGone are fakes)',
    capabilities: { ownerGone: true },
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    async watch(p, s, f) {
      if (failWatches) throw new Error('watch refused (staged)')
      return watches.watch(p, s, f)
    },
    close: () => inner.close(),
    async commit(checks, ops, options) {
      const i = gates.findIndex((g) => g.match(checks, ops))
      if (i !== -1) {
        const [g] = gates.splice(i, 1)
        g!.reached()
        await g!.wait
      }
      return inner.commit(checks, ops, options)
    },
    ownerGone(owner, signal) {
      return new Promise<void>((resolve, reject) => {
        if (deadNow.has(owner)) return resolve()
        dead.set(owner, resolve)
        signal.addEventListener('abort', () => reject(signal.reason), { once: true })
      })
    },
    async registerOwner() {},
  }
  return {
    adapter,
    /** Holds the next commit that matches before the store. */
    gate(match: Match): Gate {
      let reached!: () => void
      let open!: () => void
      const arrived = new Promise<void>((r) => (reached = r))
      const wait = new Promise<void>((r) => (open = r))
      gates.push({ match, reached, wait })
      return { arrived, open }
    },
    /** Says `owner`'s client is gone. */
    kill(owner: string) {
      deadNow.add(owner)
      dead.get(owner)?.()
    },
    /** How many watches are open now (started and not yet ended). */
    openWatches: () => watches.open(),
    /** Makes every new watch fail (as a transport that is down would). */
    refuseWatches(on = true) {
      failWatches = on
    },
  }
}

let n = 0
/** A fresh memory namespace on a new ManualClock. */
export function freshStore() {
  const clock = new ManualClock(1_000)
  const namespace = `machine-${++n}-${Math.random().toString(36).slice(2)}`
  return { clock, raw: () => memoryAdapter({ namespace, clock }) }
}
