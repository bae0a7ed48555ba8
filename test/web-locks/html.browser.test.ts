/**
 * The web-platform-tests `web-locks/` HTML cases that apply to a page, in
 * real Chromium, each run twice: on Chromium's own `navigator.locks`, and
 * on zaris/web-locks over IndexedDB with a client per context — so that a
 * difference between the two would show. From workers.tentative (a window
 * and dedicated workers: shared, exclusive, a terminated worker), query.any
 * (the cases it runs with a worker: clientIds of two contexts, a deadlock
 * seen by query() — here queried in the worker too), frames.tentative
 * (windows and frames: shared, exclusive, removed or navigated with a held
 * lock or a pending request) and query-ordering (requests of three frames
 * appear in query() in the order made). Each context runs an agent
 * (fixtures/agent.ts) in its own realm, with its own modules and client.
 *
 * Not here: the service-worker clientId case (clientids: a zaris clientId
 * is the zaris client's id, docs/web-locks.md), bfcache, partitioning,
 * opaque origins and documents that are not fully active (the store's
 * business, not the facade's).
 */
import { afterEach, describe, expect, test } from 'vitest'
import type { AgentAnswer, AgentAsk } from './fixtures/agent'
import { clientsOf, gate, unique, until, type AnyLockManager } from './helpers'
import { pageManagers, type Kind } from './page'

const url = `zaris://idb/web-locks-html-${Math.random().toString(36).slice(2)}`
const windowLocks = pageManagers(url)
const cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups.splice(0)) c()
})

type Agent = (ask: AgentAsk) => Promise<AgentAnswer>

/** A dedicated worker running an agent; terminated after the test unless `keep`. */
async function worker(kind: Kind): Promise<{ ask: Agent; worker: Worker }> {
  const w = new Worker(new URL('./fixtures/agent-worker.ts', import.meta.url), { type: 'module' })
  cleanups.push(() => w.terminate())
  const waiting = new Map<number, (a: AgentAnswer) => void>()
  let seq = 0
  const ready = new Promise<void>((resolve, reject) => {
    w.onmessage = (e: MessageEvent<{ ready?: boolean; seq?: number; answer?: AgentAnswer }>) => {
      if (e.data.ready) return resolve()
      waiting.get(e.data.seq!)?.(e.data.answer!)
      waiting.delete(e.data.seq!)
    }
    w.onerror = (e) => reject(new Error(`the worker failed: ${e.message}`))
  })
  w.postMessage({ init: { kind, url } })
  await ready
  const ask: Agent = (a) =>
    new Promise((resolve) => {
      waiting.set(++seq, resolve)
      w.postMessage({ seq, ask: a })
    })
  return { ask, worker: w }
}

/** A frame running an agent in its own realm; removed after the test. */
async function frame(kind: Kind): Promise<{ ask: Agent; frame: HTMLIFrameElement }> {
  const f = document.createElement('iframe')
  f.style.display = 'none'
  const loaded = new Promise((r) => f.addEventListener('load', r, { once: true }))
  f.srcdoc = '<!doctype html><title>agent</title>'
  document.body.append(f)
  cleanups.push(() => f.remove())
  await loaded
  const w = f.contentWindow as unknown as { eval(code: string): Promise<void>; __agent?: Agent; __vitest_browser_runner__?: unknown }
  // Vitest's browser mode rewrites dynamic imports into a call of its runner; the frame has none, so it gets one that imports.
  w.__vitest_browser_runner__ = { wrapDynamicImport: (load: () => Promise<unknown>) => load() }
  await w.eval(`(async () => {
    window.__agent = await (await import('/test/web-locks/fixtures/agent.ts')).agentFor(${JSON.stringify(kind)}, ${JSON.stringify(url)})
  })()`)
  const agent = w.__agent!
  return { ask: (a) => agent(a), frame: f }
}

/** Navigates a frame away from its document (`srcdoc` wins over `src`: it goes first). */
function navigate(f: HTMLIFrameElement): void {
  f.removeAttribute('srcdoc')
  f.src = 'about:blank'
}

/** Whether `p` settled within a few turns of the event loop (a lock that should stay blocked). */
async function settledSoon(p: Promise<unknown>): Promise<boolean> {
  let settled = false
  void p.then(() => (settled = true), () => (settled = true))
  await new Promise((r) => setTimeout(r, 50))
  return settled
}

/** The WPT's "Window and X - shared mode", "Window and X - exclusive mode" and "X and X - exclusive mode", X a worker or a frame. */
function twoContextCases<C extends { ask: Agent }>(kind: Kind, what: string, make: (kind: Kind) => Promise<C>): void {
  test(`Window and ${what} - shared mode`, async () => {
    const [locks, c] = [await windowLocks(kind), await make(kind)]
    const res = unique('shared')
    const { lock_id } = await c.ask({ op: 'request', name: res, mode: 'shared' })
    await locks.request(res, { mode: 'shared' }, async () => c.ask({ op: 'release', lock_id: lock_id! }))
  })

  test(`Window and ${what} - exclusive mode`, async () => {
    const [locks, c] = [await windowLocks(kind), await make(kind)]
    const res = unique('exclusive')
    const { lock_id } = await c.ask({ op: 'request', name: res })
    const { blocked, granted } = await blockedHere(locks, res)
    await c.ask({ op: 'release', lock_id: lock_id! })
    await blocked
    expect(granted()).toBe(true)
  })

  test(`${what} and ${what} - exclusive mode`, async () => {
    const [c1, c2] = [await make(kind), await make(kind)]
    const res = unique('exclusive')
    const { lock_id } = await c1.ask({ op: 'request', name: res })
    const blocked = c2.ask({ op: 'request', name: res })
    expect((await c2.ask({ op: 'request', name: res, ifAvailable: true })).failed).toBe(true)
    expect(await settledSoon(blocked)).toBe(false)
    await c1.ask({ op: 'release', lock_id: lock_id! })
    expect((await blocked).lock_id).toBeGreaterThan(0)
  })
}

/** A request of this window for `res`, which another context holds: checked blocked (an ifAvailable request gets null). */
async function blockedHere(locks: AnyLockManager, res: string): Promise<{ blocked: Promise<unknown>; granted: () => boolean }> {
  let granted = false
  const blocked = locks.request(res, () => (granted = true))
  expect(await locks.request(res, { ifAvailable: true }, (lock) => lock !== null)).toBe(false)
  expect(granted).toBe(false)
  return { blocked, granted: () => granted }
}

/** A context takes a lock, this window waits for it, `end` ends the context: the window is granted. */
function heldByEnded<C extends { ask: Agent }>(kind: Kind, make: (kind: Kind) => Promise<C>, end: (c: C) => void): () => Promise<void> {
  return async () => {
    const [locks, c] = [await windowLocks(kind), await make(kind)]
    const res = unique('ended')
    await c.ask({ op: 'request', name: res })
    const { blocked, granted } = await blockedHere(locks, res)
    end(c)
    await blocked
    expect(granted()).toBe(true)
  }
}

for (const kind of ['navigator', 'zaris'] as const) {
  describe(kind === 'navigator' ? "Chromium's navigator.locks" : 'zaris/web-locks over IndexedDB', () => {
    describe('workers', () => {
      twoContextCases(kind, 'Worker', worker)
      test('Terminated Worker - exclusive mode', heldByEnded(kind, worker, (w) => w.worker.terminate()), 20_000)

      test('query() reports different ids for held locks from different contexts (a worker)', async () => {
        const [locks, w] = [await windowLocks(kind), await worker(kind)]
        const res = unique('w-ids')
        const { lock_id } = await w.ask({ op: 'request', name: res, mode: 'shared' })
        await locks.request(res, { mode: 'shared' }, async () => {
          const ids = clientsOf((await locks.query()).held, res)
          expect(ids).toHaveLength(2)
          expect(ids[0]).not.toBe(ids[1])
          // The worker's own query() sees the same two holders.
          const theirs = clientsOf((await w.ask({ op: 'query' })).state!.held, res)
          expect([...theirs].sort()).toEqual([...ids].sort())
        })
        await w.ask({ op: 'release', lock_id: lock_id! })
      })

      test('query() can observe a deadlock (a window and a worker; queried in both)', async () => {
        const [locks, w] = [await windowLocks(kind), await worker(kind)]
        const [res1, res2] = [unique('dl-1'), unique('dl-2')]
        const { lock_id } = await w.ask({ op: 'request', name: res1 })
        const [letGo, release] = gate()
        const [ours, held] = gate()
        const mine = locks.request(res2, () => (held(), letGo))
        await ours
        const theirWait = w.ask({ op: 'request', name: res2 })
        await until(async () => clientsOf((await locks.query()).pending, res2).length === 1)
        expect((await w.ask({ op: 'request', name: res2, ifAvailable: true })).failed).toBe(true)
        const ourWait = locks.request(res1, () => {})
        await until(async () => clientsOf((await locks.query()).pending, res1).length === 1)
        for (const state of [await locks.query(), (await w.ask({ op: 'query' })).state!]) {
          const [h1, h2, p1, p2] = [clientsOf(state.held, res1), clientsOf(state.held, res2), clientsOf(state.pending, res1), clientsOf(state.pending, res2)]
          expect([h1.length, h2.length, p1.length, p2.length]).toEqual([1, 1, 1, 1])
          expect(h1[0]).toBe(p2[0])
          expect(h2[0]).toBe(p1[0])
        }
        release()
        await mine
        const theirs = await theirWait
        await w.ask({ op: 'release', lock_id: lock_id! })
        await ourWait
        await w.ask({ op: 'release', lock_id: theirs.lock_id! })
      })
    })

    describe('frames', () => frameCases(kind))
  })
}

function frameCases(kind: Kind): void {
  twoContextCases(kind, 'Frame', frame)
  test('Terminated Frame with held lock', heldByEnded(kind, frame, (f) => f.frame.remove()), 20_000)
  test('Navigated Frame with held lock', heldByEnded(kind, frame, (f) => navigate(f.frame)), 20_000)

  for (const how of ['Navigated', 'Removed'] as const) {
    test(`${how} Frame with pending request`, async () => {
      const [f1, f2, f3] = [await frame(kind), await frame(kind), await frame(kind)]
      const res = unique('f-pending')
      const { lock_id } = await f1.ask({ op: 'request', name: res })
      void f2.ask({ op: 'request', name: res })
      const locks = await windowLocks(kind)
      await until(async () => clientsOf((await locks.query()).pending, res).length === 1)
      const blocked = f3.ask({ op: 'request', name: res })
      expect((await f3.ask({ op: 'request', name: res, ifAvailable: true })).failed).toBe(true)
      expect(await settledSoon(blocked)).toBe(false)
      if (how === 'Removed') f2.frame.remove()
      else navigate(f2.frame)
      await f1.ask({ op: 'release', lock_id: lock_id! })
      expect((await blocked).lock_id).toBeGreaterThan(0)
    }, 20_000)
  }

  test('Requests appear in state in order made. (query-ordering: three frames)', async () => {
    const locks = await windowLocks(kind)
    const frames = [await frame(kind), await frame(kind), await frame(kind)]
    const res = unique('qo')
    const ids = await Promise.all(frames.map(async (f) => (await f.ask({ op: 'client_id', name: unique('qo-id') })).client_id!))
    expect(new Set(ids).size).toBe(3)
    const [firstGroup, releaseFirst] = gate()
    const [taken, take] = gate()
    const first = locks.request(res, () => (take(), firstGroup))
    await taken
    const lock1 = frames[0]!.ask({ op: 'request', name: res })
    await until(async () => clientsOf((await locks.query()).pending, res).length === 1)
    const lock2 = frames[1]!.ask({ op: 'request', name: res })
    await until(async () => clientsOf((await locks.query()).pending, res).length === 2)
    void frames[2]!.ask({ op: 'request', name: res })
    await until(async () => clientsOf((await locks.query()).pending, res).length === 3)
    const pending = async () => clientsOf((await locks.query()).pending, res).filter((c) => ids.includes(c!))
    expect(await pending()).toEqual([ids[0], ids[1], ids[2]])
    // The second group, in another order: 3, 1, 2.
    for (const i of [2, 0, 1]) {
      void frames[i]!.ask({ op: 'request', name: res })
      await until(async () => (await pending()).length === 3 + [2, 0, 1].indexOf(i) + 1)
    }
    releaseFirst()
    await first
    await frames[0]!.ask({ op: 'release', lock_id: (await lock1).lock_id! })
    await frames[1]!.ask({ op: 'release', lock_id: (await lock2).lock_id! })
    // The third frame's first request now holds; its second and the others' wait in the order made.
    // (Waited for: Chromium's own release can settle in the frame before its browser process grants.)
    await until(async () => (await pending()).length === 3)
    expect(await pending()).toEqual([ids[2], ids[0], ids[1]])
  }, 20_000)
}
