/**
 * A client process of the fault suite. It takes locks, writes to the
 * resource each lock guards (`lock:X` guards `res:X`) fenced by the lock, and
 * records every step in its history file (test/faults/recorder.ts), so that
 * whatever is done to it — kill -9, SIGSTOP, a cut network, a clock jump —
 * the checker can judge what it did.
 *
 *   node --import tsx test/faults/worker.ts '<WorkerConfig as JSON>'
 *
 * (procs.ts runs it bundled with esbuild, which starts faster than tsx.)
 *
 * Modes:
 * - `rounds`: `rounds` times, wait for a random lock, write `writes` times
 *   fenced (with random work between), release, then (with `staleProbe`)
 *   write once more fenced by the released lock, which must be refused.
 * - `hold`: take one lock and keep it (auto-renewed unless `autoRenew` is
 *   false), writing fenced every `interval` ms (0: never); exit after
 *   `stopAfterRefused` refused writes, or release after `holdMs`.
 *
 * Prints `held <token>` when it first holds a lock and `done` at the end.
 */
import { existsSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { connect, type Lock } from 'zaris'
import { recordedOps, recordedOver } from './ops'
import { sharedNow } from './checker'
import { fileRecorder, recordUnhandled } from './recorder'
import { prng } from './scale'

export interface WorkerConfig {
  url: string
  id: string
  /** The history file. */
  log: string
  /** The first process number of its store operations in the history (unique per worker). */
  firstProcess?: number
  mode: 'rounds' | 'hold'
  locks: string[]
  ttl: number
  /** ms an acquisition waits. */
  wait: number
  autoRenew?: boolean
  rounds?: number
  writes?: number
  /** Random work between steps, [min, max] ms. */
  workMs?: [number, number]
  staleProbe?: boolean
  interval?: number
  stopAfterRefused?: number
  holdMs?: number
  /** rounds: also write a unique key `put:<id>:<round>` unfenced each round (for lost-write checks). */
  plainPuts?: boolean
  /** rounds: stop early once this file exists. */
  stopFile?: string
  seed?: number
}

const config = JSON.parse(process.argv[2]!) as WorkerConfig
// Kept alive by hand: while the HTTP adapter waits between retries to an unreachable node, nothing
// else keeps Node's loop alive and the process would end at once with code 13 ("unsettled top-level
// await") in the middle of a call (reported as a bug; see RELIABILITY.md).
const alive = setInterval(() => {}, 60_000)
const record = fileRecorder(config.log, config.firstProcess ?? 0)
recordUnhandled(record, config.id)
const random = prng(config.seed ?? 1)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const work = () => {
  const [min, max] = config.workMs ?? [0, 0]
  return max > 0 ? sleep(min + random() * (max - min)) : Promise.resolve()
}
// Every store operation of the client recorded, in the Jepsen shape, beside the observations.
const client = recordedOver((await connect(config.url, { id: config.id })).adapter, config.id, record.sink)
// How late this process's timers ran, reported with each loss: a starved process learns late, like a paused one.
const loopDelay = monitorEventLoopDelay({ resolution: 5 })
loopDelay.enable()
const ops = recordedOps(client, config.id, (r) => {
  record(r)
  if (r.type === 'loss') {
    record({ type: 'note', client: config.id, text: 'event loop delay', at: r.at, maxMs: loopDelay.max / 1e6, p99Ms: loopDelay.percentile(99) / 1e6 })
    loopDelay.reset()
  }
})
ops.note('started', { pid: process.pid, wallSkew: Date.now() - sharedNow() })
const options = { ttl: config.ttl, wait: config.wait, autoRenew: config.autoRenew ?? true }

let announced = false
const announce = (lock: Lock) => {
  if (!announced) console.log(`held ${lock.token}`)
  announced = true
}

if (config.mode === 'rounds') {
  for (let round = 0; round < (config.rounds ?? 1); round++) {
    if (config.stopFile && existsSync(config.stopFile)) break
    if (config.plainPuts) await ops.plainPut(`put:${config.id}:${round}`, round)
    const lock = await ops.take(config.locks[Math.floor(random() * config.locks.length)]!, options)
    if (!lock) {
      await sleep(50 + random() * 100)
      continue
    }
    announce(lock)
    for (let w = 0; w < (config.writes ?? 1); w++) {
      await work()
      await ops.write(lock, round * 100 + w)
    }
    await ops.release(lock)
    if (config.staleProbe) await ops.write(lock, -1)
    ops.note('round', { round })
  }
} else {
  let lock: Lock | undefined
  while (!lock) lock = await ops.take(config.locks[0]!, options)
  announce(lock)
  const started = performance.now()
  let refused = 0
  for (let seq = 0; ; seq++) {
    if (config.holdMs !== undefined && performance.now() - started >= config.holdMs) {
      await ops.release(lock)
      break
    }
    if (config.interval) {
      if ((await ops.write(lock, seq)) === 'refused' && ++refused >= (config.stopAfterRefused ?? Infinity)) break
      await sleep(config.interval)
    } else {
      await sleep(50)
    }
  }
}
await client.close().catch(() => {})
ops.note('done')
console.log('done')
clearInterval(alive)
