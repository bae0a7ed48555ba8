/**
 * Issue 35's acceptance: a fleet of instances fires the same job every
 * second (job-worker.ts: `jobs.once(job, tick's time, fn)`), their wall
 * clocks skewed across ±2 s (shift-clock.ts), while instances are killed
 * with kill -9 in the middle of a run and restarted. Once they stopped, a
 * late instance fires every slot still left started (a catch-up at start;
 * counted: none, unless runs lost their locks after every waiter gave up).
 * Judged afterwards (job-check.ts): every slot ran exactly once, or is recorded as failed
 * and was retried once; no run wrote after a later run of its slot began;
 * each run's writes fenced; and the store's operations linearizable
 * (test/lincheck, through checker.ts `assertHistory`).
 *
 * `npm test` runs 5 instances for 10 s with 2 kills on a zaris node (a
 * real process); `npm run test:faults` 10 instances for 60 s with 14 kills,
 * on a node, on Redis and on etcd (real servers), one after the other.
 */
import { cpSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { connect, type JobRecord } from 'zaris'
import { EtcdCluster } from '../etcd/server'
import { RedisServer } from '../redis/server'
import { startNode } from '../server/node-process'
import type { HistoryEvent } from '../lincheck/history'
import { assertHistory, sharedNow } from './checker'
import { checkFleet, type Instance } from './job-check'
import { fireJob } from './job-fire'
import { memoryHistory, recordedClient, recordedOps } from './ops'
import type { JobWorkerConfig } from './job-worker'
import { JOB_WORKER, sleep, until, Workspace, type WorkerProcess } from './procs'
import { count, figure, LONG, prng, quantiles, seedFor, timeout } from './scale'

/** A store the fleet runs on: its connection string, and how to stop it. */
interface Store {
  url: string
  stop(): Promise<unknown>
}

const STORES: Record<string, () => Promise<Store>> = {
  'a node': async () => {
    const node = await startNode()
    return { url: `zaris://127.0.0.1:${node.port}/fleet`, stop: () => node.kill9() }
  },
  Redis: async () => {
    const redis = await new RedisServer().start()
    return { url: redis.url('fleet'), stop: () => redis.dispose() }
  },
  etcd: async () => {
    const etcd = await EtcdCluster.start(1)
    return { url: etcd.url('fleet'), stop: () => etcd.dispose() }
  },
}

const workspaces: Workspace[] = []
const running: Store[] = []
afterAll(async () => {
  await Promise.all(workspaces.map((w) => w.dispose()))
  await Promise.all(running.map((s) => s.stop()))
})

const instances = count(5, 10)
const seconds = count(10, 60)
const kills = count(2, 14)
const SKEW_MS = 2_000
const JOB = 'fleet'

/** How long the store took to answer the instances' operations (invocation to completion), in ms. */
function storeLatency(events: HistoryEvent[]): ReturnType<typeof quantiles> {
  const open = new Map<HistoryEvent['process'], number>()
  const ms: number[] = []
  for (const e of events) {
    if (e.type === 'invoke') open.set(e.process, e.time)
    else if (open.has(e.process)) {
      ms.push((e.time - open.get(e.process)!) / 1e6)
      open.delete(e.process)
    }
  }
  return quantiles(ms)
}

/**
 * The worker that prints the next `run <slot> <token>` line from now on (a run just started) for a slot in `slots`
 * (epoch ms), or `undefined` by `deadline`.
 */
async function nextRun(workers: () => WorkerProcess[], slots: { from: number; to: number }, deadline: number): Promise<WorkerProcess | undefined> {
  const runs = (w: WorkerProcess) => [...w.output().matchAll(/^run (\S+) /gm)].map((m) => Date.parse(m[1]!))
  const seen = new Map(workers().map((w) => [w, runs(w).length]))
  while (Date.now() < deadline) {
    for (const w of workers()) {
      const mine = runs(w)
      const fresh = mine.slice(seen.get(w) ?? 0)
      seen.set(w, mine.length)
      if (w.alive() && fresh.some((slot) => slot >= slots.from && slot <= slots.to)) return w
    }
    await sleep(5)
  }
  return undefined
}

/** The stores to run on: every one in the long run, a node in the short one; `ZARIS_JOB_STORES` (names, comma-separated) picks. */
const chosen = process.env.ZARIS_JOB_STORES?.split(',') ?? (LONG ? Object.keys(STORES) : ['a node'])

test.each(chosen)(`on %s: ${instances} instances fire one job every second for ${seconds} s, clocks skewed up to ±2 s, ${kills} killed mid-run (kill -9) and restarted: every slot ran once, or failed and was retried once; no run wrote after its retry began; writes fenced`, async (store) => {
  const started = await STORES[store]!()
  running.push(started)
  const ws = new Workspace()
  workspaces.push(ws)
  const random = prng(seedFor(`jobs-fleet-${store}`))
  const ttl = 2_000
  const startAt = sharedNow()
  const slotsFile = join(ws.dir, 'slots.json')
  const config: Omit<JobWorkerConfig, 'id' | 'log' | 'seed'> = {
    url: started.url,
    job: JOB,
    period: 1_000,
    slots: slotsFile,
    ttl,
    // Long enough to outlast a run killed, and its retry killed too (the kills pick runs that just started).
    wait: 6 * ttl + 3_000,
    retention: 600_000,
    writes: 3,
    workMs: [50, 250],
  }
  // Offsets spread evenly over ±2 s: the first instance 2 s behind, the last 2 s ahead.
  const offset = (i: number) => Math.round(-SKEW_MS + (2 * SKEW_MS * i) / (instances - 1))
  const start = (i: number) => ws.spawn({ ...config, id: `i${i}`, seed: seedFor(`jobs-fleet-${i}-${ws.workers.length}`) }, { offsetMs: offset(i) }, JOB_WORKER)
  const current = Array.from({ length: instances }, (_, i) => start(i))
  // The slots, once every instance is connected: from 4 s on (none of the clocks, 2 s ahead at most, is past it).
  await Promise.all(current.map((w) => w.waitFor(/^connected$/m, 60_000)))
  const firstSlot = Math.ceil(Date.now() / 1_000) * 1_000 + 2 * SKEW_MS
  const lastSlot = firstSlot + (seconds - 1) * 1_000
  // Written whole under another name, then renamed: a worker that saw the file only half written read no JSON
  // and died (run 33, before its first slot).
  writeFileSync(`${slotsFile}.tmp`, JSON.stringify({ first: firstSlot, last: lastSlot }))
  renameSync(`${slotsFile}.tmp`, slotsFile)
  const killedAt = new Map<WorkerProcess, number>()
  const restarts: Array<Promise<void>> = []
  // The kills, spread over the slots, hit runs of slots every instance fires: from the first slot all of them
  // fire (an instance that started late begins at a later slot), to before the last ones, which the instances
  // whose clocks are behind would fire after the end. The instance that runs a slot first (its clock ahead) is
  // killed while the others have still to fire it, or wait for it.
  const firsts = await Promise.all(current.map(async (w) => Date.parse((await w.waitFor(/^ready (\S+)$/m, 60_000))[1]!)))
  const window = { from: Math.max(...firsts), to: lastSlot - 2 * SKEW_MS }
  expect(window.to - window.from, 'slots every instance fires, to kill runs of').toBeGreaterThanOrEqual(kills * 1_000)
  for (let k = 0; k < kills; k++) {
    await sleep(window.from - SKEW_MS + ((window.to - window.from) * (k + random())) / kills - Date.now())
    const victim = await nextRun(() => current, window, window.to + SKEW_MS + 500)
    if (!victim) break
    await sleep(20 + random() * 80)
    const at = sharedNow()
    await victim.kill9()
    killedAt.set(victim, at)
    const i = current.indexOf(victim)
    restarts.push(
      sleep(300 + random() * 900).then(() => {
        if (Date.now() < lastSlot - SKEW_MS) current[i] = start(i)
      }),
    )
  }
  await Promise.all(restarts)
  await until(() => ws.workers.every((w) => !w.alive()), 60_000 + 3 * config.wait, 'every instance to stop')
  for (const w of ws.workers.filter((x) => !killedAt.has(x))) expect(w.output(), w.id).toMatch(/^done$/m)

  const instancesRun: Instance[] = ws.workers.map((w) => ({ name: w.log, records: w.history(), ...(killedAt.has(w) ? { killedAt: killedAt.get(w)! } : {}) }))
  const slots = new Set(instancesRun.flatMap((i) => i.records.filter((r) => r.type === 'note' && r.text === 'job-fire').map((r) => (r as unknown as { slot: string }).slot)))
  // A late instance — the catch-up at start docs/jobs.md says a failed slot needs when nobody waits to retry it —
  // fires every slot still left started (or never started), as the fleet's instances do. None is, unless the
  // machine is so loaded that runs lose their locks after every waiter for their slot gave up (seen at load 45).
  const late = memoryHistory()
  const lateClient = await recordedClient(config.url, 'late', late.sink)
  const lateOps = recordedOps(lateClient, 'late', late.record)
  let swept = 0
  for (const slot of slots) {
    const record = await lateClient.jobs.record(JOB, slot)
    if (record && record.state !== 'started') continue
    swept++
    await fireJob(lateClient, lateOps, { ...config, wait: 3 * ttl + 2_000 }, slot, random)
  }
  await lateClient.close()
  instancesRun.push({ name: 'late', records: late.history })
  const finals = new Map<string, JobRecord | undefined>()
  const reader = await connect(config.url, { id: 'reader' })
  for (const slot of slots) finals.set(slot, await reader.jobs.record(JOB, slot))
  // A store may free an entry up to its TTL granularity after the TTL (etcd's whole seconds): the model lets it.
  const lateExpiry = reader.adapter.capabilities?.ttlGranularity ?? 1
  await reader.close()
  const verdict = checkFleet({ instances: instancesRun, finals, writes: config.writes, retries: 1 }, JOB)
  const latency = storeLatency([...ws.operations(), ...late.operations])
  console.log(`[jobs] store operations on ${store}: ${JSON.stringify(latency)}`)
  if (verdict.violations.length > 0) {
    // The instances' histories outlive the workspace, for a look at what each did.
    const kept = mkdtempSync(join(tmpdir(), 'zaris-job-fleet-'))
    cpSync(ws.dir, kept, { recursive: true })
    console.log(`[jobs] the instances' histories: ${kept}`)
  }
  expect(verdict.violations, verdict.violations.slice(0, 20).join('\n')).toEqual([])
  expect(verdict.stats.slots).toBeGreaterThanOrEqual(seconds)
  expect(killedAt.size, 'every kill found a run to interrupt').toBe(kills)
  expect(verdict.stats.killedMidRun, 'a killed run was retried').toBeGreaterThanOrEqual(1)
  const lin = assertHistory([...ws.history(), ...late.history], [...ws.operations(), ...late.operations], { lateExpiry })
  await figure(`job fleet on ${store}: ${instances} instances, ±${SKEW_MS} ms skew, ${kills} kill -9`, {
    slots: verdict.stats.slots,
    runs: verdict.stats.runs,
    retried_slots: verdict.stats.retried,
    failed_slots: verdict.stats.failedSlots,
    killed_mid_run: verdict.stats.killedMidRun,
    swept_by_a_late_instance: swept,
    ...Object.fromEntries(Object.entries(verdict.stats.results).map(([k, v]) => [`calls_${k}`, v])),
    operations: lin.operations,
    store_op_p50_ms: latency.p50,
    store_op_p99_ms: latency.p99,
    store_op_max_ms: latency.max,
    check_ms: lin.checkMs,
    wall_s: (sharedNow() - startAt) / 1_000,
  })
}, timeout(120_000, 400_000))
