/**
 * Issue 35's acceptance: a fleet of instances fires the same job every
 * second (job-worker.ts: `jobs.once(job, tick's time, fn)`), their wall
 * clocks skewed across ±2 s (shift-clock.ts), while instances are killed
 * with kill -9 in the middle of a run and restarted. Judged afterwards
 * (job-check.ts): every slot ran exactly once, or is recorded as failed
 * and was retried once; no run wrote after a later run of its slot began;
 * each run's writes fenced; and the store's operations linearizable
 * (test/lincheck, through checker.ts `assertHistory`).
 *
 * `npm test` runs 5 instances for 10 s with 2 kills; `npm run test:faults`
 * 10 instances for 60 s with 14 kills, on a zaris node (a real process).
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { connect, type JobRecord } from 'zaris'
import { startNode, type NodeProcess } from '../server/node-process'
import { assertHistory, sharedNow } from './checker'
import { checkFleet, type Instance } from './job-check'
import type { JobWorkerConfig } from './job-worker'
import { JOB_WORKER, sleep, until, Workspace, type WorkerProcess } from './procs'
import { count, figure, prng, seedFor, timeout } from './scale'

let node: NodeProcess
let ws: Workspace
beforeAll(async () => {
  node = await startNode()
  ws = new Workspace()
})
afterAll(async () => {
  await ws?.dispose()
  await node?.kill9()
})

const instances = count(5, 10)
const seconds = count(10, 60)
const kills = count(2, 14)
const SKEW_MS = 2_000
const JOB = 'fleet'

/** The worker that prints the next `run <slot> <token>` line from now on (a run just started), or `undefined` by `deadline`. */
async function nextRun(workers: () => WorkerProcess[], deadline: number): Promise<WorkerProcess | undefined> {
  const runs = (w: WorkerProcess) => (w.output().match(/^run /gm) ?? []).length
  const seen = new Map(workers().map((w) => [w, runs(w)]))
  while (Date.now() < deadline) {
    const started = workers().find((w) => w.alive() && runs(w) > (seen.get(w) ?? 0))
    if (started) return started
    await sleep(5)
  }
  return undefined
}

test(`${instances} instances fire one job every second for ${seconds} s, clocks skewed up to ±2 s, ${kills} killed mid-run (kill -9) and restarted: every slot ran once, or failed and was retried once; no run wrote after its retry began; writes fenced`, async () => {
  const random = prng(seedFor('jobs-fleet'))
  const ttl = 2_000
  const startAt = sharedNow()
  // Slots from 4 s on (the instances started, the fastest clock not yet past the first), each instance fires each one.
  const firstSlot = Math.ceil(Date.now() / 1_000) * 1_000 + 2 * SKEW_MS
  const config: Omit<JobWorkerConfig, 'id' | 'log' | 'seed'> = {
    url: `zaris://127.0.0.1:${node.port}/fleet`,
    job: JOB,
    period: 1_000,
    firstSlot,
    lastSlot: firstSlot + (seconds - 1) * 1_000,
    ttl,
    wait: 3 * ttl + 2_000,
    retention: 600_000,
    writes: 3,
    workMs: [50, 250],
  }
  // Offsets spread evenly over ±2 s: the first instance 2 s behind, the last 2 s ahead.
  const offset = (i: number) => Math.round(-SKEW_MS + (2 * SKEW_MS * i) / (instances - 1))
  const start = (i: number) => ws.spawn({ ...config, id: `i${i}`, seed: seedFor(`jobs-fleet-${i}-${ws.workers.length}`) }, { offsetMs: offset(i) }, JOB_WORKER)
  const current = Array.from({ length: instances }, (_, i) => start(i))
  const killedAt = new Map<WorkerProcess, number>()
  const restarts: Array<Promise<void>> = []
  // The kills, spread over the slots' real times, but not the last ones: the instance that runs a slot first (its
  // clock 2 s ahead) is killed while the others, whose clocks are behind it, have still to fire the slot.
  const window = { from: firstSlot - SKEW_MS, to: config.lastSlot - 2 * SKEW_MS }
  for (let k = 0; k < kills; k++) {
    await sleep(window.from + ((window.to - window.from) * (k + random())) / kills - Date.now())
    const victim = await nextRun(() => current, window.to + 500)
    if (!victim) break
    await sleep(20 + random() * 80)
    const at = sharedNow()
    await victim.kill9()
    killedAt.set(victim, at)
    const i = current.indexOf(victim)
    restarts.push(
      sleep(300 + random() * 900).then(() => {
        if (Date.now() < config.lastSlot - SKEW_MS) current[i] = start(i)
      }),
    )
  }
  await Promise.all(restarts)
  await until(() => ws.workers.every((w) => !w.alive()), 60_000 + 3 * config.wait, 'every instance to stop')
  for (const w of ws.workers.filter((x) => !killedAt.has(x))) expect(w.output(), w.id).toMatch(/^done$/m)

  const instancesRun: Instance[] = ws.workers.map((w) => ({ name: w.log, records: w.history(), ...(killedAt.has(w) ? { killedAt: killedAt.get(w)! } : {}) }))
  const slots = new Set(instancesRun.flatMap((i) => i.records.filter((r) => r.type === 'note' && r.text === 'job-fire').map((r) => (r as unknown as { slot: string }).slot)))
  const reader = await connect(config.url, { id: 'reader' })
  const finals = new Map<string, JobRecord | undefined>()
  for (const slot of slots) finals.set(slot, await reader.jobs.record(JOB, slot))
  await reader.close()
  const verdict = checkFleet({ instances: instancesRun, finals, writes: config.writes, retries: 1 }, JOB)
  expect(verdict.violations, verdict.violations.slice(0, 20).join('\n')).toEqual([])
  expect(verdict.stats.slots).toBeGreaterThanOrEqual(seconds)
  expect(killedAt.size, 'every kill found a run to interrupt').toBe(kills)
  expect(verdict.stats.killedMidRun, 'a killed run was retried').toBeGreaterThanOrEqual(1)
  const lin = assertHistory(ws.history(), ws.operations())
  await figure(`job fleet: ${instances} instances, ±${SKEW_MS} ms skew, ${kills} kill -9`, {
    slots: verdict.stats.slots,
    runs: verdict.stats.runs,
    retried_slots: verdict.stats.retried,
    failed_slots: verdict.stats.failedSlots,
    killed_mid_run: verdict.stats.killedMidRun,
    ...Object.fromEntries(Object.entries(verdict.stats.results).map(([k, v]) => [`calls_${k}`, v])),
    operations: lin.operations,
    check_ms: lin.checkMs,
    wall_s: (sharedNow() - startAt) / 1_000,
  })
}, timeout(120_000, 400_000))
