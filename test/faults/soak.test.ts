/**
 * The soak: worker processes taking four locks in rounds through one node
 * process, while a chaos loop kills workers with kill -9 (a replacement
 * takes over the rest of their rounds) and pauses them with SIGSTOP for up
 * to twice the TTL. A watcher follows every resource. The whole history —
 * every process's, the watcher's, the final state — is checked: no stale
 * write accepted, no token regression, no double grant, no watch gap, no
 * unhandled rejection.
 *
 * Short run: 4 processes x 20 acquisitions; long run (ZARIS_FAULT_SCALE=1):
 * 16 processes x 500.
 */
import { afterAll, expect, test } from 'vitest'
import { startNode, type NodeProcess } from '../server/node-process'
import { assertHistory, sharedNow, type HistoryRecord } from './checker'
import { memoryHistory, recordedClient, recordedWatch } from './ops'
import { Workspace, sleep, until, type WorkerProcess } from './procs'
import { count, figure, prng, quantiles, seedFor, timeout } from './scale'

const ws = new Workspace()
let node: NodeProcess | undefined
afterAll(async () => {
  await ws.dispose()
  await node?.kill9()
})

const processes = count(4, 16)
const rounds = count(20, 500)

test(`${processes} processes x ${rounds} acquisitions through a node, with random kill -9 and SIGSTOP`, async () => {
  const random = prng(seedFor('soak'))
  node = await startNode()
  const url = `zaris://127.0.0.1:${node.port}/soak`
  const ttl = 1_000
  const { history, record, operations, sink } = memoryHistory()
  const observer = await recordedClient(url, 'observer', sink)
  const watch = await recordedWatch(observer, 'observer', 'resources', 'res:', 0, record)
  const started = performance.now()

  /** A slot is one of the `processes` lines of work; a killed worker's replacement finishes its rounds. */
  interface Slot {
    worker: WorkerProcess
    left: number
    generation: number
  }
  const acquisitionsOf = (w: WorkerProcess) => w.history().filter((r) => r.type === 'acquire').length
  const spawn = (slot: number, generation: number, left: number) =>
    ws.spawn({ url, id: `s${slot}g${generation}`, mode: 'rounds', rounds: left, locks: ['lock:a', 'lock:b', 'lock:c', 'lock:d'], ttl, wait: 120_000, writes: 1, workMs: [0, 10], staleProbe: true, seed: seedFor(`soak-${slot}-${generation}`) })
  const slots: Slot[] = Array.from({ length: processes }, (_, i) => ({ worker: spawn(i, 0, rounds), left: rounds, generation: 0 }))

  let kills = 0
  let pauses = 0
  const pausedFor: number[] = []
  const running = () => slots.filter((s) => s.worker.alive())
  // Chaos until every slot finished its rounds.
  while (running().length > 0) {
    await sleep(150 + random() * 600)
    const live = running()
    if (live.length === 0) break
    const slot = live[Math.floor(random() * live.length)]!
    if (random() < 0.3) {
      await slot.worker.kill9()
      kills++
      const done = slot.worker.history().filter((r) => r.type === 'note' && r.text === 'round').length
      slot.left -= done
      if (slot.left > 0) {
        slot.generation++
        slot.worker = spawn(slots.indexOf(slot), slot.generation, slot.left)
      }
    } else {
      const ms = random() * 2 * ttl
      slot.worker.pause()
      pauses++
      pausedFor.push(ms)
      await sleep(ms)
      slot.worker.resume()
    }
  }
  const seconds = (performance.now() - started) / 1000
  const workers = ws.workers
  const crashed = (await Promise.all(workers.map((w) => w.exited))).filter((e) => e.signal !== 'SIGKILL' && e.code !== 0)
  expect(crashed, workers.map((w) => w.output()).join('\n').slice(-3000)).toEqual([])
  const workerHistory: HistoryRecord[] = workers.flatMap((w) => w.history())
  const acquisitions = workers.reduce((n, w) => n + acquisitionsOf(w), 0)
  const finals: HistoryRecord[] = []
  for (const resource of ['res:a', 'res:b', 'res:c', 'res:d']) {
    const e = await observer.get<{ token: number }>(resource)
    finals.push({ type: 'final', resource, revision: e?.revision ?? 0, token: e?.value.token, at: sharedNow() })
  }
  const lastRes = Math.max(0, ...workerHistory.flatMap((r) => (r.type === 'write' && r.outcome === 'accepted' ? [r.revision!] : [])))
  await until(() => watch.last() >= lastRes, 30_000, `the watcher reaching ${lastRes}`)
  watch.end(lastRes)
  await observer.close()
  const stats = assertHistory([...workerHistory, ...history, ...finals], [...ws.operations(), ...operations])
  expect(acquisitions).toBeGreaterThanOrEqual(processes * rounds)
  const losses = workerHistory.filter((r) => r.type === 'loss').length
  await figure(`soak: ${processes} processes x ${rounds} acquisitions through a node`, {
    seconds,
    acquisitions,
    processes_started: workers.length,
    kills,
    pauses,
    pause_p50_ms: quantiles(pausedFor).p50,
    losses,
    operations_checked: stats.operations,
    unknown_outcome: stats.unknownOutcome,
    check_ms: stats.checkMs,
    accepted: stats.accepted,
    refused: stats.refused,
    unknown: stats.unknown,
    watch_events: stats.watchEvents,
    linearizable: 'yes',
    stale_writes_accepted: 0,
    token_regressions: 0,
    unhandled_rejections: 0,
  })
}, timeout(120_000, 1_200_000))
