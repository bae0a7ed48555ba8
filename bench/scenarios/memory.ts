/**
 * In-process: the memory adapter's acquire + release (TTL on, auto-renew on,
 * a fencing token per hold, as users run it) against async-mutex.
 *
 * @module
 */
import { Mutex } from 'async-mutex'
import { connect } from 'zaris'
import { alternate } from '../lib/compare'
import { loop } from '../lib/measure'
import type { Scenario } from '../lib/report'
import type { BenchContext } from './context'

export async function memoryScenario(ctx: BenchContext): Promise<Scenario> {
  const client = await connect('zaris://inproc/bench-memory')
  const mutex = new Mutex()
  const dur = ctx.quick ? 150 : 400
  try {
    const rows = await alternate(
      [
        {
          label: 'zaris memory',
          zaris: true,
          trial: () =>
            loop(async () => {
              const lock = await client.locks.acquire('lock:bench', { ttl: 30_000 })
              if (!lock) throw new Error('the bench lock was not free')
              await lock.release()
            }, dur),
        },
        {
          label: 'async-mutex',
          zaris: false,
          trial: () =>
            loop(async () => {
              const release = await mutex.acquire()
              release()
            }, dur),
        },
      ],
      ctx.trials,
    )
    return {
      id: 'memory',
      title: 'In-process lock',
      op: 'acquire + release of one uncontended lock (zaris: ttl 30 s, auto-renew, fencing token)',
      metric: 'ops',
      rows,
    }
  } finally {
    await client.close()
  }
}
