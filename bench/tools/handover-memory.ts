/**
 * The handover loop of the bench's `handover` group on the in-process
 * memory store: 9 clients on one store, no network, so what is left is the
 * JS of a release, the wake of the first waiter and its take (and the last
 * holder queuing again). p50/p90 of release call -> grant, and CPU per cycle.
 *
 *   npx tsx bench/tools/handover-memory.ts [rounds=300]
 *
 * @module
 */
import { memoryAdapter } from 'zaris/memory'
import { handovers } from '../lib/handover'
import { zarisPeer } from '../lib/locks'
import { median, quantile } from '../lib/measure'

const ROUNDS = Number(process.argv[2] ?? 300)
const shared = memoryAdapter()
const peers = Array.from({ length: 9 }, () => zarisPeer(shared))
for (let k = 0; k < 3; k++) {
  const c0 = process.cpuUsage()
  const t = await handovers(peers, `k${k}`, ROUNDS, 1)
  const c = process.cpuUsage(c0)
  const us = (ms: number) => (ms * 1000).toFixed(0)
  console.log(`memory store, 8 waiters: handover p50 ${us(median(t.lat))} µs, p90 ${us(quantile(t.lat, 0.9))} µs; CPU per cycle ${((c.user + c.system) / 1000 / ROUNDS).toFixed(3)} ms`)
}
await Promise.all(peers.map((p) => p.close()))
