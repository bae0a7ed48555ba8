/**
 * Waiting commits (`waitChange`) judged by the model and the lincheck
 * checker, on a node served in this process (so that test/mutants can
 * inject a bug into the node's parking: src/server/parking.ts, and the
 * store's: src/adapters/kit/parked.ts), over real HTTP on loopback, memory
 * store: as it is (the store hands over: parked takes tried in the
 * release's own step), and with the store's `handover` hidden from the node
 * (a fake, named so: the node then parks as in front of a Redis or an etcd,
 * on its watch of the store).
 *
 * - The model's random scenarios, with the acquire machine's `park` state in
 *   use (counted: the node's parked commits in the runs).
 * - A waiter that gives up while its take is parked: the place it deletes
 *   wakes the parked take, whose second try must fail on that very check;
 *   the recorded history must be linearizable, and the holder must still hold.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { Client, connect, type Adapter } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { createHandler, listen, memoryBackend, type Handler, type Listening } from '../../src/server'
import { count, figure, timeout } from '../faults/scale'
import { MemoryHistory, recordingAdapter } from '../lincheck/recorder'
import { verifyHistory } from '../lincheck/verify'
import { assertScenarios, parkScenarioArbitrary, realEnvironment, realScenarios } from './scenario'

let handler: Handler
let node: Listening
const backend = memoryBackend()
let watchedHandler: Handler
let watched: Listening
const watchedBackend = memoryBackend()

/** The memory store's adapter with `handover` hidden (a fake: the node parks on its watch, as in front of Redis or etcd). */
const withoutHandover = (adapter: Adapter): Adapter =>
  new Proxy(adapter, {
    get(target, p) {
      if (p === 'capabilities') return { ...target.capabilities, handover: false }
      const v = Reflect.get(target, p, target) as unknown
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  })

beforeAll(async () => {
  handler = createHandler({ adapterFor: backend.adapterFor })
  node = await listen(handler, { port: 0, host: '127.0.0.1' })
  watchedHandler = createHandler({ adapterFor: async (ns) => withoutHandover(await watchedBackend.adapterFor(ns)) })
  watched = await listen(watchedHandler, { port: 0, host: '127.0.0.1' })
})
afterAll(async () => {
  await node?.close()
  await watched?.close()
  await backend.close()
  await watchedBackend.close()
})

/** A counter of the node's parking, as /metrics renders it. */
function parking(name: string, of: Handler = handler): number {
  const text = of.metrics.render({ watchers: 0, locksHeld: 0, namespaces: 0 })
  return Number(new RegExp(`^zaris_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN)
}

const runs = count(8, 40)

test(`${runs} random scenarios through a node whose waiters park their takes: linearizable, every hold's signal right`, async () => {
  const parked = parking('commits_parked_total')
  const retried = parking('commits_park_retries_total')
  const adapter = (ns: string) => async () => (await connect(`zaris://127.0.0.1:${node.port}/${ns}`)).adapter
  const r = await assertScenarios(runs, realScenarios(), (scheduler, run) => realEnvironment(adapter(`park-model-${run}`), scheduler), 'p')
  const used = { parked: parking('commits_parked_total') - parked, retried: parking('commits_park_retries_total') - retried }
  await figure('model test, node with parked takes', { runs: r.runs, operations: r.operations, seconds: r.ms / 1000, ...used })
  // How often the new path was taken is reported (the figure), not asserted: random scenarios park a few times
  // in a run, or not at all; the tests below make sure of it. assertScenarios asserts linearizability and the signals.
}, timeout(180_000, 1_200_000))

const parkRuns = count(12, 40)

test(`${parkRuns} random scenarios of short holds racing parked takes: linearizable, every hold's signal right, the node's second try reached`, async () => {
  const retried = parking('commits_park_retries_total')
  const parked = parking('commits_parked_total')
  const adapter = (ns: string) => async () => (await connect(`zaris://127.0.0.1:${node.port}/${ns}`)).adapter
  const r = await assertScenarios(parkRuns, parkScenarioArbitrary(), (scheduler, run) => realEnvironment(adapter(`park-race-${run}`), scheduler), 'q', { shrinkMs: 30_000 })
  const used = { parked: parking('commits_parked_total') - parked, retried: parking('commits_park_retries_total') - retried }
  await figure('model test, short holds racing parked takes', { runs: r.runs, operations: r.operations, seconds: r.ms / 1000, ...used })
  // 12 runs retried 13-36 times in 24 measured runs of the test (a loaded machine, 2 cores): a floor well below the lowest.
  expect(used.retried).toBeGreaterThanOrEqual(4)
}, timeout(180_000, 1_200_000))

test('a waiter that gives up while parked: its take fails on the place it deleted, the holder keeps the lock, the history is linearizable', async () => {
  const history = new MemoryHistory(() => performance.now())
  const clientOf = (id: string) => new Client(recordingAdapter(httpAdapter({ endpoints: [node.url], namespace: 'park-give-up' }), history, id), { id })
  const a = clientOf('a')
  const b = clientOf('b')
  const after: Array<{ holder: string | undefined; lost: boolean }> = []
  try {
    for (let round = 0; round < 3; round++) {
      const held = (await a.locks.acquire('lock:x', { ttl: 20_000 }))!
      const stop = new AbortController()
      const waiting = b.locks.acquire('lock:x', { ttl: 20_000, wait: 10_000, signal: stop.signal }).then(
        () => 'won',
        () => 'gave up',
      )
      const end = Date.now() + 5_000
      while (parking('commits_parked') !== 1) {
        if (Date.now() > end) throw new Error('the take did not park')
        await new Promise((r) => setTimeout(r, 5))
      }
      stop.abort(new Error('stop'))
      expect(await waiting).toBe('gave up')
      after.push({ holder: (await a.locks.holder('lock:x'))?.owner, lost: held.signal.aborted })
      await held.release()
    }
  } finally {
    await Promise.all([a.close(), b.close()])
  }
  // The checker first: a second try applied past a check that fails shows as a commit no order explains.
  const verdict = verifyHistory(history.events)
  if (!verdict.ok) throw new Error(verdict.report)
  expect(after).toEqual([1, 2, 3].map(() => ({ holder: 'a', lost: false })))
}, 60_000)

test('three clients handing one lock around by parked takes: linearizable, one holder at a time, takes tried again at the node', async () => {
  const history = new MemoryHistory(() => performance.now())
  const ids = ['c0', 'c1', 'c2']
  const clients = ids.map((id) => new Client(recordingAdapter(httpAdapter({ endpoints: [node.url], namespace: 'park-handover' }), history, id), { id }))
  const retried = parking('commits_park_retries_total')
  let holding = 0
  let most = 0
  const tokens: number[] = []
  try {
    await Promise.all(
      clients.map(async (c) => {
        for (let i = 0; i < 8; i++) {
          const lock = (await c.locks.acquire('lock:x', { ttl: 10_000, wait: 20_000 }))!
          holding++
          most = Math.max(most, holding)
          tokens.push(lock.token)
          await new Promise((r) => setTimeout(r, 5 + Math.random() * 15))
          holding--
          expect(await lock.release()).toBe(true)
        }
      }),
    )
  } finally {
    await Promise.all(clients.map((c) => c.close()))
  }
  expect(most).toBe(1)
  expect(tokens).toEqual([...tokens].sort((x, y) => x - y))
  const used = parking('commits_park_retries_total') - retried
  await figure('handover by parked takes, 3 clients x 8', { retried: used, operations: history.events.length / 2 })
  expect(used).toBeGreaterThan(0)
  const verdict = verifyHistory(history.events)
  if (!verdict.ok) throw new Error(verdict.report)
}, 60_000)

test(`${parkRuns} random scenarios of short holds racing parked takes, the node parking on its watch (handover hidden, a fake): linearizable, the node's later tries reached`, async () => {
  const retried = parking('commits_park_retries_total', watchedHandler)
  const adapter = (ns: string) => async () => (await connect(`zaris://127.0.0.1:${watched.port}/${ns}`)).adapter
  const r = await assertScenarios(parkRuns, parkScenarioArbitrary(), (scheduler, run) => realEnvironment(adapter(`park-watched-${run}`), scheduler), 'w', { shrinkMs: 30_000 })
  const used = parking('commits_park_retries_total', watchedHandler) - retried
  await figure('model test, short holds racing takes parked on the node\'s watch', { runs: r.runs, operations: r.operations, seconds: r.ms / 1000, retried: used })
  expect(used).toBeGreaterThanOrEqual(4)
}, timeout(180_000, 1_200_000))
