/**
 * Redis restarted under the adapter (stopped, or killed with kill -9, and
 * started again on the same port) while worker processes take locks and
 * write through `redis://`, and a watcher follows the resources.
 * - With an append-only file fsynced on every write: nothing acknowledged is
 *   lost, nothing goes backwards, no stale write, the watch misses nothing.
 * - Without persistence (Redis forgets everything): the README's promise is
 *   much narrower: acknowledged writes and locks are lost, and a client's
 *   tokens stay above the ones it saw but not above other clients': a token
 *   can be granted twice and two holders of one token can both write (as the
 *   README warns; counted and reported here). The history, with each restart
 *   recorded as the store losing its state (`store-restart`), is still
 *   linearizable against the store model; a watcher is told (COMPACTED)
 *   rather than left with a silent gap, and no client fails unhandled.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { HEAVY_LIBRARIES, named, using } from '../redis/clients'
import { RedisServer } from '../redis/server'
import type { HistoryEvent } from '../lincheck/history'
import { againOnClockStep, assertHistory, checkHistory, sharedNow, type HistoryRecord } from './checker'
import { memoryHistory, recordedClient, recordedWatch } from './ops'
import { Workspace, sleep, until } from './procs'
import { count, figure, prng, seedFor, timeout } from './scale'

const ws = new Workspace()
const servers: RedisServer[] = []
afterAll(async () => {
  await ws.dispose()
  await Promise.all(servers.map((s) => s.dispose()))
})

const restarts = count(3, 30)

// Each library without persistence in `npm test`; with it too (ioredis always) in `npm run test:faults`.
const cases = HEAVY_LIBRARIES.flatMap((library) => [true, false].map((durable) => ({ library, durable }))).filter(
  (c) => c.library === 'ioredis' || !c.durable || process.env.ZARIS_FAULT_SCALE,
)

for (const { library, durable } of cases) {
  test(`Redis ${durable ? 'with appendfsync always' : 'without persistence'}, restarted ${restarts} times under 3 workers (${named(library)})`, () => againOnClockStep(async (attempt) => {
    const again = attempt ? '-again' : ''
    const random = prng(seedFor(`redis-${durable}`))
    // Redis judges TTLs by its host's wall clock; the history runs on the monotonic one: a run that fails
    // while they step apart (NTP, a VM resumed) is void and goes again (againOnClockStep).
    const skewAtStart = Date.now() - sharedNow()
    const redis = new RedisServer({ durable })
    servers.push(redis)
    await redis.start()
    const url = using(redis.url(`${durable ? 'durable' : 'volatile'}${again}`), library)
    const stopFile = join(ws.dir, `stop-${durable}-${library}${again}`)
    const procs = Array.from({ length: 3 }, (_, i) =>
      ws.spawn({ url, id: `r${durable ? 'd' : 'v'}${again}${i}`, mode: 'rounds', rounds: 1_000_000, locks: ['lock:a', 'lock:b'], ttl: 1_000, wait: 30_000, writes: 2, workMs: [0, 20], staleProbe: true, plainPuts: true, stopFile, seed: seedFor(`redis-w${i}`) }),
    )
    await Promise.all(procs.map((p) => p.waitFor(/held/)))
    const { history, record, operations, sink } = memoryHistory()
    const observer = await recordedClient(url, 'observer', sink)
    // Each restart of a Redis without persistence, as the store losing its state (the model's store-restart).
    const restartsSeen: HistoryEvent[] = []
    const watch = await recordedWatch(observer, 'observer', 'resources', 'res:', 0, record)
    const kinds: string[] = []
    for (let i = 0; i < restarts; i++) {
      await sleep(300 + random() * 700)
      const kill = random() < 0.5
      kinds.push(kill ? 'kill -9' : 'stop')
      const down = sharedNow()
      if (kill) await redis.kill()
      else await redis.stop()
      await sleep(random() * 300)
      await redis.start()
      if (!durable) restartsSeen.push({ process: 'nemesis', type: 'info', f: 'store-restart', value: { start: Math.round(down * 1e6) }, time: Math.round(sharedNow() * 1e6) })
    }
    await sleep(500)
    writeFileSync(stopFile, '')
    const exits = await Promise.all(procs.map((p) => p.exited))
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0])
    const workerHistory = procs.flatMap((p) => p.history())
    const finals: HistoryRecord[] = []
    const resources = new Set(workerHistory.flatMap((r) => (r.type === 'write' && r.outcome === 'accepted' ? [r.resource] : [])))
    for (const resource of resources) {
      const e = await observer.get<{ token?: number }>(resource)
      const value = e?.value
      finals.push({ type: 'final', resource, revision: e?.revision ?? 0, token: typeof value === 'object' && value !== null ? value.token : undefined, at: sharedNow() })
    }
    const lastRes = Math.max(0, ...workerHistory.flatMap((r) => (r.type === 'write' && r.outcome === 'accepted' && r.resource.startsWith('res:') ? [r.revision!] : [])))
    const endedHonestly = () => history.some((r) => r.type === 'watch-end')
    await until(() => watch.last() >= lastRes || endedHonestly(), 30_000, `the watcher reaching revision ${lastRes}`)
    watch.end(lastRes)
    await observer.close()
    const clockStep = Math.round(Date.now() - sharedNow() - skewAtStart)
    const stats = assertHistory([...workerHistory, ...history, ...finals], [...procs.flatMap((p) => p.operations()), ...operations, ...restartsSeen])
    // Forgetting everything loses acknowledged writes and locks, and the revision counter starts again
    // below what some clients saw: a token can be granted twice, go backwards across clients, and two
    // holders of one token can both pass fencing (the README's Redis section says a store that loses
    // data behaves like a failover). The piecemeal checks count how often; only reported.
    const result = checkHistory([...workerHistory, ...history, ...finals])
    const byKind = (k: string) => result.violations.filter((v) => v.kind === k).length
    if (durable) expect(result.violations.map((v) => v.message)).toEqual([])
    await figure(`Redis ${durable ? 'appendfsync always' : 'no persistence'}: restarted under the adapter (${named(library)})`, {
      restarts,
      kinds: kinds.join(' '),
      wall_clock_step_ms: clockStep,
      operations_checked: stats.operations,
      unknown_outcome: stats.unknownOutcome,
      linearizable: 'yes',
      acquisitions: result.stats.acquisitions,
      accepted: result.stats.accepted,
      unknown: result.stats.unknown,
      stale_refused: result.stats.refused,
      watch_events: result.stats.watchEvents,
      watch_ended: history.find((r) => r.type === 'watch-end')?.type === 'watch-end' ? (history.find((r) => r.type === 'watch-end') as { reason: string }).reason : 'no',
      lost_writes: byKind('lost-write'),
      revision_regressions: byKind('revision-regression'),
      double_grants: byKind('double-grant'),
      stale_writes: byKind('stale-write'),
      token_regressions: byKind('token-regression'),
    })
  }), timeout(180_000, 1_200_000))
}
