/**
 * A three-member etcd cluster under 8 worker processes that each run rounds
 * of acquire → fenced write → release (then a fenced write with the released
 * lock, which must be refused) through `etcd://` given all three members,
 * while the leader is killed with kill -9 and started again, several times,
 * and between the kills a follower is paused with SIGSTOP. A watcher follows
 * the resources. The recorded histories are checked: every acknowledged
 * fenced write carries a token above all before it, no stale write is
 * accepted, no acknowledged write is lost, no token is granted twice, the
 * watch neither skips nor repeats.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { EtcdCluster } from '../etcd/server'
import { assertHistory } from './checker'
import { finalRecords, memoryHistory, recordedClient, recordedWatch } from './ops'
import { Workspace, sleep, until } from './procs'
import { count, figure, prng, seedFor, timeout } from './scale'

const ws = new Workspace()
let etcd: EtcdCluster | undefined
afterAll(async () => {
  await ws.dispose()
  await etcd?.dispose()
})

const WORKERS = 8
const rounds = count(12, 100)
const kills = count(2, 5)

test(`etcd, three members: ${WORKERS} workers x ${rounds} rounds while the leader is killed ${kills} times and a follower is paused`, async () => {
  const random = prng(seedFor('etcd-cluster'))
  etcd = await EtcdCluster.start(3)
  const url = etcd.url('faults')
  const stopFile = join(ws.dir, 'stop-etcd')
  const started = performance.now()
  const procs = Array.from({ length: WORKERS }, (_, i) =>
    ws.spawn({ url, id: `e${i}`, mode: 'rounds', rounds, locks: ['lock:a', 'lock:b', 'lock:c'], ttl: 3_000, wait: 60_000, writes: 1, workMs: [0, 20], staleProbe: true, plainPuts: true, stopFile, seed: seedFor(`etcd-w${i}`) }),
  )
  await Promise.all(procs.map((p) => p.waitFor(/held/, 60_000)))
  const { history, record, operations, sink } = memoryHistory()
  const observer = await recordedClient(url, 'observer', sink)
  const watch = await recordedWatch(observer, 'observer', 'resources', 'res:', 0, record)
  const faults: string[] = []
  const running = () => procs.some((p) => p.alive())
  for (let i = 0; i < kills && running(); i++) {
    await sleep(500 + random() * 1_000)
    const leader = await etcd.leader()
    faults.push(`kill -9 leader ${leader.name}`)
    await leader.kill()
    await sleep(300 + random() * 700)
    await leader.start()
    if (!running()) break
    await sleep(300 + random() * 700)
    const follower = etcd.members.find((m) => m !== leader && m.running) ?? etcd.members.find((m) => m.running)!
    const lead = await etcd.leader()
    const paused = lead === follower ? etcd.members.find((m) => m !== lead && m.running)! : follower
    faults.push(`SIGSTOP ${paused.name}`)
    paused.pause()
    await sleep(1_000 + random() * 2_000)
    paused.resume()
    await Promise.all(etcd.members.map((m) => m.healthy()))
  }
  const exits = await Promise.all(procs.map((p) => p.exited))
  const elapsed = performance.now() - started
  writeFileSync(stopFile, '')
  expect(exits.map((e) => e.code)).toEqual(procs.map(() => 0))
  const workerHistory = procs.flatMap((p) => p.history())
  const { finals, lastResourceRevision: lastRes } = await finalRecords(observer, workerHistory)
  await until(() => watch.last() >= lastRes, 30_000, `the watcher reaching revision ${lastRes}`)
  watch.end(lastRes)
  await observer.close()
  // etcd frees an entry up to its lease granularity after the TTL, and up to one more lease TTL after a
  // leader change (src/adapters/etcd/index.ts): the model lets it live that much longer, never shorter.
  const granularity = observer.adapter.capabilities?.ttlGranularity ?? 1_000
  const stats = assertHistory([...workerHistory, ...history, ...finals], [...ws.operations(), ...operations], { clockMargin: 5, lateExpiry: granularity + Math.ceil(3_000 / granularity) * granularity })
  const result = { stats }
  expect(result.stats.acquisitions).toBeGreaterThanOrEqual(WORKERS * rounds * 0.9)
  await figure('etcd three members: leader kill -9 and follower SIGSTOP under 8 workers', {
    workers: WORKERS,
    rounds,
    faults: faults.join(', '),
    seconds: elapsed / 1000,
    acquisitions: result.stats.acquisitions,
    accepted: result.stats.accepted,
    unknown: result.stats.unknown,
    stale_refused: result.stats.refused,
    watch_events: result.stats.watchEvents,
    operations_checked: stats.operations,
    unknown_outcome: stats.unknownOutcome,
    undecided_partitions: stats.undecided,
    violations: 0,
  })
}, timeout(240_000, 900_000))
