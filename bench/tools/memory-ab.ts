/**
 * The memory row of `npm run bench` alone (bench/scenarios/memory.ts):
 * acquire + release of one lock on `zaris://inproc` against async-mutex,
 * alternating trials, printing one JSON line (ops/s of each, the ratio), so
 * runs of two trees can be set side by side (A/B). With `--loop SECONDS` it
 * runs only zaris's cycle, for `node --cpu-prof`. Besides ops/s it prints
 * the process's CPU time per op (user + system, µs), which a loaded machine
 * disturbs much less than wall-clock throughput.
 *
 *   npx tsx bench/tools/memory-ab.ts [trials=7] [ms per trial=400]
 *   node --cpu-prof --import tsx bench/tools/memory-ab.ts --loop 5
 *
 * @module
 */
import { Mutex } from 'async-mutex'
import { connect } from 'zaris'
import { loop, median } from '../lib/measure'

const client = await connect('zaris://inproc/bench-memory-ab')
const cycle = async () => {
  const lock = await client.locks.acquire('lock:bench', { ttl: 30_000 })
  if (!lock) throw new Error('the bench lock was not free')
  await lock.release()
}
if (process.argv[2] === '--loop') {
  const t = await loop(cycle, Number(process.argv[3] ?? 5) * 1000)
  console.log(JSON.stringify({ zaris: Math.round((t.ops / t.ms) * 1000) }))
} else {
  const trials = Number(process.argv[2] ?? 7)
  const dur = Number(process.argv[3] ?? 400)
  const mutex = new Mutex()
  const z: number[] = []
  const m: number[] = []
  const zCpu: number[] = []
  const mCpu: number[] = []
  /** One trial: ops/s, and CPU µs per op. */
  const trial = async (op: () => Promise<unknown>, rate: number[], cpu: number[]) => {
    const before = process.cpuUsage()
    const t = await loop(op, dur)
    const used = process.cpuUsage(before)
    rate.push((t.ops / t.ms) * 1000)
    cpu.push((used.user + used.system) / t.ops)
  }
  // Warm both, as the bench's first trial would.
  await loop(cycle, 200)
  for (let i = 0; i < trials; i++) {
    await trial(cycle, z, zCpu)
    await trial(async () => (await mutex.acquire())(), m, mCpu)
  }
  console.log(
    JSON.stringify({
      zaris: Math.round(median(z)),
      asyncMutex: Math.round(median(m)),
      ratio: +(median(z) / median(m)).toFixed(3),
      zarisCpuUs: +median(zCpu).toFixed(2),
      asyncMutexCpuUs: +median(mCpu).toFixed(2),
    }),
  )
}
await client.close()
