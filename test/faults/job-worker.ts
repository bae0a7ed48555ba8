/**
 * An instance of a scheduled job, for the fault suite's fleet test
 * (jobs.test.ts): like a cron process, it fires `jobs.once(job, slot, fn)`
 * at every whole `period` of its own wall clock (which shift-clock.ts may
 * skew), the slot being that tick's time, without waiting for the previous
 * tick's call — from the slot `firstSlot` (or the next tick, when it starts
 * later) to `lastSlot`, so that every instance alive fires every slot of the run. Each run writes `writes` times to its slot's resource,
 * fenced by its lock, with random work between. Every step goes to its
 * history file (recorder.ts), its client's store operations too, so that
 * whatever is done to the process (kill -9) the checker can judge what it did.
 *
 *   node --import tsx test/faults/job-worker.ts '<JobWorkerConfig as JSON>'
 *
 * Prints `run <slot> <token>` when a run starts, `fired <n>` at each tick,
 * and `done` once it fired `lastSlot` and its calls under way have ended.
 */
import { connect, type JobResult } from 'zaris'
import { sharedNow } from './checker'
import { recordedOps, recordedOver } from './ops'
import { fileRecorder, recordUnhandled } from './recorder'
import { prng } from './scale'

export interface JobWorkerConfig {
  url: string
  id: string
  /** The history file. */
  log: string
  firstProcess?: number
  job: string
  /** ms between ticks of the wall clock. */
  period: number
  /** The first and last slot to fire (epoch ms, whole periods). */
  firstSlot: number
  lastSlot: number
  ttl: number
  wait: number
  retention: number
  writes: number
  /** Random work before each write, [min, max] ms. */
  workMs: [number, number]
  seed: number
}

/** A job step in the history: a note whose `text` says which. */
export type JobNote =
  | { text: 'job-fire'; slot: string }
  | { text: 'job-run'; slot: string; token: number }
  | { text: 'job-result'; slot: string; status: string; token?: number; attempt?: number; by?: string; state?: string; error?: string }

const config = JSON.parse(process.argv[2]!) as JobWorkerConfig
const alive = setInterval(() => {}, 60_000) // see worker.ts: kept alive by hand while the adapter retries
const record = fileRecorder(config.log, config.firstProcess ?? 0)
recordUnhandled(record, config.id)
const random = prng(config.seed)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const client = recordedOver((await connect(config.url, { id: config.id })).adapter, config.id, record.sink)
const ops = recordedOps(client, config.id, record)
const note = (n: JobNote) => ops.note(n.text, n)
ops.note('started', { pid: process.pid, wallSkew: Date.now() - sharedNow() })

/** One call of the job for `slot`, its result in the history. */
async function fire(slot: string): Promise<void> {
  note({ text: 'job-fire', slot })
  let result: JobResult<number>
  try {
    result = await client.jobs.once(
      config.job,
      slot,
      async (lock) => {
        note({ text: 'job-run', slot, token: lock.token })
        console.log(`run ${slot} ${lock.token}`)
        let accepted = 0
        for (let seq = 0; seq < config.writes; seq++) {
          const [min, max] = config.workMs
          await sleep(min + random() * (max - min))
          if ((await ops.write(lock, seq)) === 'accepted') accepted++
        }
        return accepted
      },
      { ttl: config.ttl, wait: config.wait, retention: config.retention },
    )
  } catch (err) {
    note({ text: 'job-result', slot, status: 'rejected', error: (err as Error).message })
    return
  }
  const error = result.status === 'failed' ? ((result.error as { code?: string })?.code ?? String(result.error)) : undefined
  note({ text: 'job-result', slot, ...result, ...(error === undefined ? {} : { error }), ...(result.status === 'ran' ? { value: result.value } : {}) } as JobNote)
}

// The scheduler: every whole period of this process's wall clock, the tick's time is the slot.
const calls = new Set<Promise<void>>()
let fired = 0
for (let next = Math.max(config.firstSlot, Math.floor(Date.now() / config.period + 1) * config.period); next <= config.lastSlot; next += config.period) {
  await sleep(next - Date.now())
  const call = fire(new Date(next).toISOString())
  calls.add(call)
  void call.finally(() => calls.delete(call))
  console.log(`fired ${++fired}`)
}
await Promise.all(calls)
await client.close().catch(() => {})
ops.note('done')
console.log('done')
clearInterval(alive)
