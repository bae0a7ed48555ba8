/**
 * Whether the wait line's order holds on a store: N clients of one process
 * contend for one lock (acquire with wait, release at once, again) for 4 s;
 * prints each client's wins and how often the client that just released
 * won again (a fair line: 0 %; a free-for-all: 1/N). On Postgres without a
 * store-side handover the releaser's next plain try beats the line's head,
 * which first has to hear of the release (NOTIFY, a log read) and then take.
 *
 * `npx tsx bench/tools/postgres-fairness.ts`
 */
import { PostgresServer } from '../../test/postgres/server'
import { postgresAdapter } from 'zaris/postgres'
import { Client } from '../../src/core/client'
const s = await new PostgresServer().start()
const N = 4
const clients = await Promise.all(Array.from({ length: N }, async (_, i) => new Client(await postgresAdapter({ url: s.url('fair'), pg: { max: 4 } }), { id: `c${i}` })))
const seq: number[] = []
let stop = false
setTimeout(() => (stop = true), 4000)
await Promise.all(clients.map(async (c, i) => {
  while (!stop) {
    const lock = await c.locks.acquire('lock:f', { ttl: 30_000, wait: 5_000 })
    if (!lock) continue
    seq.push(i)
    await lock.release()
  }
}))
let same = 0
for (let j = 1; j < seq.length; j++) if (seq[j] === seq[j - 1]) same++
const counts = Array.from({ length: N }, (_, i) => seq.filter((x) => x === i).length)
console.log(`wins ${seq.length}, per client ${counts.join(' ')}, the releaser won again ${(same / (seq.length - 1) * 100).toFixed(0)}% (fair line: 0%, random: ${(100 / N).toFixed(0)}%)`)
console.log(seq.slice(0, 60).join(''))
await Promise.all(clients.map((c) => c.close()))
await s.dispose()
