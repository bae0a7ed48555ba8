/**
 * Postgres under the adapter, while worker processes take locks and write
 * through `postgres://` fenced by them, and a watcher follows the resources:
 * - killed with kill -9 (the postmaster and every backend at once) or shut
 *   down, and started again on the same data: nothing acknowledged is lost,
 *   no stale write passes, tokens and revisions never go back, the watch
 *   misses nothing;
 * - behind a proxy that resets every connection, or lets commits through
 *   and throws their answers away before cutting (a commit whose answer is
 *   lost: the adapter sends it again under its request id, and is answered,
 *   not applied twice).
 * Every history is checked with the checker (test/faults/checker.ts) and
 * the store model (test/lincheck). Postgres judges TTLs by its wall clock,
 * the history by the monotonic one: a run that fails while this VM's wall
 * clock steps (a CI run saw ~25 s: two 10 s places expired) is reported
 * and run again (`againOnClockStep`). Short in `npm test`; `npm run
 * test:faults` runs 16 workers and many more faults.
 */
import { afterAll, expect, test } from 'vitest'
import { PostgresServer } from '../postgres/server'
import { againOnClockStep, assertHistory, checkHistory } from './checker'
import { finalRecords, memoryHistory, recordedClient, recordedWatch } from './ops'
import { Workspace, sleep, until } from './procs'
import { FaultProxy } from './proxy'
import { count, figure, prng, seedFor, timeout } from './scale'

const ws = new Workspace()
const servers: PostgresServer[] = []
const proxies: FaultProxy[] = []
afterAll(async () => {
  await ws.dispose()
  await Promise.all(proxies.map((p) => p.stop()))
  await Promise.all(servers.map((s) => s.dispose()))
})

const workers = count(3, 16)

/** `workers` processes taking two locks in rounds on `url`, the observer, the faults, then the checks. */
async function underFaults(name: string, url: string, faults: (random: () => number) => Promise<string[]>): Promise<void> {
  const stopFile = `${ws.dir}/stop-${name}`
  const procs = Array.from({ length: workers }, (_, i) =>
    ws.spawn({ url, id: `${name}${i}`, mode: 'rounds', rounds: 1_000_000, locks: ['lock:a', 'lock:b'], ttl: 2_000, wait: 30_000, writes: 2, workMs: [0, 20], staleProbe: true, plainPuts: true, stopFile, seed: seedFor(`${name}-w${i}`) }),
  )
  await Promise.all(procs.map((p) => p.waitFor(/held/, 60_000)))
  const { history, record, operations, sink } = memoryHistory()
  const observer = await recordedClient(url, 'observer', sink)
  const watch = await recordedWatch(observer, 'observer', 'resources', 'res:', 0, record)
  const kinds = await faults(prng(seedFor(name)))
  await sleep(500)
  const { writeFileSync } = await import('node:fs')
  writeFileSync(stopFile, '')
  const exits = await Promise.all(procs.map((p) => p.exited))
  const failed = procs.filter((_, i) => exits[i]!.code !== 0).map((p) => p.output().slice(-2_000))
  expect(exits.map((e) => e.code), failed.join('\n---\n')).toEqual(procs.map(() => 0))
  const workerHistory = procs.flatMap((p) => p.history())
  const { finals, lastResourceRevision } = await finalRecords(observer, workerHistory)
  await until(() => watch.last() >= lastResourceRevision, 30_000, `the watcher reaching revision ${lastResourceRevision}`)
  watch.end(lastResourceRevision)
  await observer.close()
  const stats = assertHistory([...workerHistory, ...history, ...finals], [...procs.flatMap((p) => p.operations()), ...operations])
  const result = checkHistory([...workerHistory, ...history, ...finals])
  expect(result.violations.map((v) => v.message)).toEqual([])
  expect(result.stats.accepted).toBeGreaterThan(0)
  expect(history.flatMap((r) => (r.type === 'watch-end' ? [r.reason] : []))).toEqual(['closed'])
  await figure(`Postgres: ${name}`, {
    workers,
    faults: kinds.length,
    kinds: [...new Set(kinds)].join(' '),
    operations_checked: stats.operations,
    unknown_outcome: stats.unknownOutcome,
    linearizable: 'yes',
    acquisitions: result.stats.acquisitions,
    accepted: result.stats.accepted,
    unknown: result.stats.unknown,
    stale_refused: result.stats.refused,
    watch_events: result.stats.watchEvents,
    stale_writes: 0,
  })
}

test(`kill -9 and restarts of Postgres under ${workers} contending workers: no stale write, no lost write, tokens never go back`, async () => {
  const server = new PostgresServer()
  servers.push(server)
  await server.start()
  await againOnClockStep((attempt) => underFaults(`restart${attempt ? '-again' : ''}`, server.url(`restarts${attempt ? '-again' : ''}`), async (random) => {
    const kinds: string[] = []
    for (let i = 0; i < count(2, 20); i++) {
      await sleep(500 + random() * 1_000)
      const kill = random() < 0.7
      kinds.push(kill ? 'kill -9' : 'stop')
      if (kill) await server.kill()
      else await server.stop()
      await sleep(random() * 500)
      await server.start()
    }
    return kinds
  }))
}, timeout(240_000, 1_800_000))

test(`connections reset and answers lost on the way back, under ${workers} contending workers: every commit applied once`, async () => {
  const server = new PostgresServer()
  servers.push(server)
  await server.start()
  const proxy = await new FaultProxy(server.port).start()
  proxies.push(proxy)
  await againOnClockStep((attempt) => underFaults(`network${attempt ? '-again' : ''}`, server.url(`network${attempt ? '-again' : ''}`, proxy.port), async (random) => {
    const kinds: string[] = []
    for (let i = 0; i < count(4, 40); i++) {
      await sleep(200 + random() * 600)
      // Every other fault is the kind the one before was not: both kinds happen in every run, whatever the seed.
      const reset = i % 2 === 0 ? random() < 0.5 : kinds[i - 1] !== 'reset'
      if (reset) {
        kinds.push('reset')
        proxy.cut()
      } else {
        kinds.push('answers lost')
        // Commits reach Postgres and are applied; their answers never come back, then the connections are cut.
        proxy.holdReplies('commit')
        await sleep(100 + random() * 300)
        proxy.heal()
      }
    }
    expect(proxy.dropped).toBeGreaterThan(0)
    return kinds
  }))
}, timeout(240_000, 1_800_000))

