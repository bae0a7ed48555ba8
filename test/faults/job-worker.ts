/**
 * An instance of a scheduled job, for the fault suite's fleet test
 * (jobs.test.ts): like a cron process, it fires `jobs.once(job, slot, fn)`
 * at every whole `period` of its own wall clock (which shift-clock.ts may
 * skew), the slot being that tick's time, without waiting for the previous
 * tick's call — over the slots the file `slots` names once every instance
 * is connected (`{ first, last }`, epoch ms), from the first (or the next
 * tick, for an instance restarted later) to the last, so that every
 * instance alive fires every slot of the run. Each run writes `writes` times to its slot's resource,
 * fenced by its lock, with random work between. Every step goes to its
 * history file (recorder.ts), its client's store operations too, so that
 * whatever is done to the process (kill -9) the checker can judge what it did.
 *
 *   node --import tsx test/faults/job-worker.ts '<JobWorkerConfig as JSON>'
 *
 * Prints `connected` once connected, `ready <first slot>` once it read the
 * slots, `run <slot> <token>` when a run starts, `fired <n>` at each tick,
 * and `done` once it fired the last slot and its calls under way have ended.
 */
import { existsSync, readFileSync } from 'node:fs'
import { connect } from 'zaris'
import { sharedNow } from './checker'
import { fireJob, type JobCallConfig } from './job-fire'
import { recordedOps, recordedOver } from './ops'
import { fileRecorder, recordUnhandled } from './recorder'
import { prng } from './scale'

export interface JobWorkerConfig extends JobCallConfig {
  url: string
  id: string
  /** The history file. */
  log: string
  firstProcess?: number
  /** ms between ticks of the wall clock. */
  period: number
  /** A file the test writes once every instance is connected: `{ first, last }`, the slots to fire (epoch ms, whole periods). */
  slots: string
  seed: number
}

const config = JSON.parse(process.argv[2]!) as JobWorkerConfig
const alive = setInterval(() => {}, 60_000) // see worker.ts: kept alive by hand while the adapter retries
const record = fileRecorder(config.log, config.firstProcess ?? 0)
recordUnhandled(record, config.id)
const random = prng(config.seed)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const client = recordedOver((await connect(config.url, { id: config.id })).adapter, config.id, record.sink)
const ops = recordedOps(client, config.id, record)
ops.note('started', { pid: process.pid, wallSkew: Date.now() - sharedNow() })
const fire = (slot: string) => fireJob(client, ops, config, slot, random, (token) => console.log(`run ${slot} ${token}`))

// The scheduler: every whole period of this process's wall clock, the tick's time is the slot.
const calls = new Set<Promise<void>>()
let fired = 0
console.log('connected')
while (!existsSync(config.slots)) await sleep(10)
const slots = JSON.parse(readFileSync(config.slots, 'utf8')) as { first: number; last: number }
const first = Math.max(slots.first, Math.floor(Date.now() / config.period + 1) * config.period)
console.log(`ready ${new Date(first).toISOString()}`)
for (let next = first; next <= slots.last; next += config.period) {
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
