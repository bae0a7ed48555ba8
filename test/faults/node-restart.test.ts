/**
 * The node itself killed with `kill -9` and restarted on the same port and
 * `--data` file, many times, while worker processes take locks, write fenced
 * and plain, and a watcher follows the resources. Checked: no acknowledged
 * write lost, tokens and revisions never go backwards (in real time, across
 * restarts), no stale write accepted, the watch rides through every restart
 * without reordering, doubling or skipping a revision. The check must reach
 * a verdict: a client resends a commit cut off by a kill (same request id)
 * until the restarted node answers it from its file, so few outcomes are
 * left unknown (1 187 of 7 971 when clients gave up after 0.3 s).
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { freePort, startNode, type NodeProcess } from '../server/node-process'
import type { HistoryEvent } from '../lincheck/history'
import { assertHistory, sharedNow, type HistoryRecord } from './checker'
import { memoryHistory, recordedClient, recordedWatch } from './ops'
import { Workspace, sleep, until } from './procs'
import { count, figure, prng, quantiles, seedFor, timeout } from './scale'

const ws = new Workspace()
let node: NodeProcess | undefined
afterAll(async () => {
  await node?.kill9()
  await ws.dispose()
})

const restarts = count(4, 100)
const workers = count(3, 4)

test(`a --data node killed with kill -9 and restarted ${restarts} times under ${workers} workers: nothing acknowledged is lost, nothing goes backwards`, async () => {
  const random = prng(seedFor('node-restart'))
  const port = await freePort()
  const file = join(ws.dir, 'store.db')
  const args = ['--port', String(port), '--data', file]
  node = await startNode(args)
  const url = `zaris://127.0.0.1:${port}/restarts`
  const stopFile = join(ws.dir, 'stop')
  const procs = Array.from({ length: workers }, (_, i) =>
    ws.spawn({ url, id: `w${i}`, mode: 'rounds', rounds: 1_000_000, locks: ['lock:a', 'lock:b'], ttl: 1_000, wait: 30_000, writes: 2, workMs: [0, 20], staleProbe: true, plainPuts: true, stopFile, seed: seedFor(`w${i}`) }),
  )
  await Promise.all(procs.map((p) => p.waitFor(/held/)))
  const { history, record, operations, sink } = memoryHistory()
  const observer = await recordedClient(url, 'observer', sink)
  const watch = await recordedWatch(observer, 'observer', 'resources', 'res:', 0, record)
  const downtimes: number[] = []
  // Each restart in the history: the store kept its entries, and gives each TTL'd one its whole TTL again.
  const restartsSeen: HistoryEvent[] = []
  for (let i = 0; i < restarts; i++) {
    await sleep(300 + random() * 1_200)
    const down = sharedNow()
    await node.kill9()
    const killedAt = sharedNow()
    node = await startNode(args)
    downtimes.push(sharedNow() - killedAt)
    restartsSeen.push({ process: 'nemesis', type: 'info', f: 'store-restart', value: { start: Math.round(down * 1e6), durable: true }, time: Math.round(sharedNow() * 1e6) })
  }
  await sleep(500)
  writeFileSync(stopFile, '')
  const exits = await Promise.all(procs.map((p) => p.exited))
  expect(exits.map((e) => e.code)).toEqual(procs.map(() => 0))

  const workerHistory = ws.history()
  const finals: HistoryRecord[] = []
  // The final state of every resource and plain key that got an acknowledged write.
  // Read through a recorded client: the checker holds the final state to every acknowledged write.
  const reader = await recordedClient(url, 'reader', sink)
  const resources = new Set(workerHistory.flatMap((r) => (r.type === 'write' && r.outcome === 'accepted' ? [r.resource] : [])))
  for (const resource of resources) {
    const e = await reader.get<{ token?: number }>(resource)
    const value = e?.value
    finals.push({ type: 'final', resource, revision: e?.revision ?? 0, token: typeof value === 'object' && value !== null ? value.token : undefined, at: sharedNow() })
  }
  // The watcher has everything up to the last acknowledged write to a resource.
  const lastRes = Math.max(0, ...workerHistory.flatMap((r) => (r.type === 'write' && r.outcome === 'accepted' && r.resource.startsWith('res:') ? [r.revision!] : [])))
  await until(() => watch.last() >= lastRes || watch.endedWith() !== undefined, 30_000, `the watcher reaching revision ${lastRes}`).catch((err) => {
    throw new Error(`${(err as Error).message}; it is at ${watch.last()}`)
  })
  expect(watch.endedWith(), 'the watch ended on its own').toBeUndefined()
  watch.end(lastRes)
  const stats = assertHistory([...workerHistory, ...history, ...finals], [...ws.operations(), ...operations, ...restartsSeen])
  await reader.close()
  await observer.close()
  // A decided check: an undecided partition (its writes alone checked) is no check of its reads.
  // The clients resend a commit through a restart (same request id), so few outcomes stay unknown.
  expect(stats.undecided, 'partitions the checker could not decide').toBe(0)
  // The work went on between restarts (how much depends on how long a restart takes on this machine).
  expect(stats.acquisitions).toBeGreaterThan(workers)
  expect(stats.accepted).toBeGreaterThan(workers * 2)
  const d = quantiles(downtimes)
  await figure(`--data node kill -9 + restart`, {
    restarts,
    workers,
    operations_checked: stats.operations,
    unknown_outcome: stats.unknownOutcome,
    linearizable: 'yes',
    undecided_partitions: stats.undecided,
    acknowledged_writes: stats.accepted,
    unknown_outcome_writes: stats.unknown,
    acquisitions: stats.acquisitions,
    stale_writes_refused: stats.refused,
    watch_events: stats.watchEvents,
    lost_writes: 0,
    token_regressions: 0,
    downtime_p50_ms: d.p50,
  })
}, timeout(120_000, 900_000))
