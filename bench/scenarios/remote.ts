/**
 * Remote locks: zaris through a node (memory, and `--data` SQLite), each a
 * process of its own reached over loopback HTTP, against Redis `SET NX PX` +
 * Lua release through ioredis and against redlock, on a redis-server of the
 * bench's own. One client back to back, and 16 clients contending for one
 * lock (zaris waits with `wait`; the Redis peers poll).
 *
 * @module
 */
import { Redis } from 'ioredis'
import { join } from 'node:path'
import { httpAdapter } from 'zaris/http'
import { alternate, type Contender } from '../lib/compare'
import { contention, oneClient, redisPeer, redlockPeer, scriptAttempts, shares, zarisPeer, type LockPeer } from '../lib/locks'
import type { Scenario } from '../lib/report'
import { node, redis as startRedis, tempDir } from '../lib/procs'
import type { BenchContext } from './context'

/** How the Redis peers poll while the lock is taken: every 10 ms plus up to 10 ms of jitter (redlock's default is 200 + 200). */
export const RETRY = { delay: 10, jitter: 10 }
export const CLIENTS = 16

export async function remoteScenarios(ctx: BenchContext): Promise<Scenario[]> {
  const dir = tempDir('zaris-bench-remote-')
  const memNode = await node()
  const dataNode = await node(['--data', join(dir.path, 'bench.db')])
  const server = await startRedis()
  const conns: Redis[] = []
  const peers: LockPeer[] = []
  const redisConn = () => {
    const r = new Redis({ host: '127.0.0.1', port: server.port, lazyConnect: false })
    conns.push(r)
    return r
  }
  const make = <P extends LockPeer>(p: P) => (peers.push(p), p)
  try {
    const zarisOn = (url: string) => make(zarisPeer(httpAdapter({ endpoints: [url], namespace: 'bench' })))
    const one = {
      mem: zarisOn(memNode.url),
      data: zarisOn(dataNode.url),
      setnx: make(redisPeer(redisConn(), RETRY)),
      redlock: make(redlockPeer(redisConn(), RETRY)),
    }
    const dur = ctx.quick ? 200 : 500
    ctx.log('remote: one client')
    const single = await alternate(
      [
        { label: 'zaris node (memory)', zaris: true, trial: () => oneClient(one.mem, 'lock:one', dur) },
        { label: 'zaris node (--data)', zaris: true, trial: () => oneClient(one.data, 'lock:one', dur) },
        { label: 'Redis SET NX PX + Lua release', zaris: false, trial: () => oneClient(one.setnx, 'lock:one:setnx', dur) },
        { label: 'redlock', zaris: false, trial: () => oneClient(one.redlock, 'lock:one:redlock', dur) },
      ],
      ctx.trials,
    )

    ctx.log(`remote: ${CLIENTS} clients`)
    const many = (f: () => LockPeer) => Array.from({ length: CLIENTS }, f)
    const group = {
      mem: many(() => zarisOn(memNode.url)),
      data: many(() => zarisOn(dataNode.url)),
      setnx: many(() => make(redisPeer(redisConn(), RETRY))),
      redlockConn: redisConn(),
    }
    const redlocks = many(() => make(redlockPeer(redisConn(), RETRY)))
    const cdur = ctx.quick ? 400 : 800
    const contenders: Contender[] = [
      { label: 'zaris node (memory), wait', zaris: true, trial: (i) => contention(group.mem, `lock:many:${i}`, cdur) },
      { label: 'zaris node (--data), wait', zaris: true, trial: (i) => contention(group.data, `lock:many:${i}`, cdur) },
      { label: 'Redis SET NX polling', zaris: false, trial: (i) => contention(group.setnx, `lock:many:setnx:${i}`, cdur) },
      { label: 'redlock, retrying', zaris: false, trial: (i) => contention(redlocks, `lock:many:redlock:${i}`, cdur, scriptAttempts(group.redlockConn)) },
    ]
    const contended = await alternate(contenders, ctx.trials)
    return [
      {
        id: 'remote-1',
        title: 'Remote lock, one client',
        op: 'acquire + release of an uncontended lock over loopback (zaris: HTTP to a node process; Redis peers: RESP to redis-server)',
        metric: 'ops',
        rows: single,
      },
      contentionScenario('remote-16', `Remote lock, ${CLIENTS} contending clients`, contended),
    ]
  } finally {
    await Promise.allSettled(peers.map((p) => p.close()))
    for (const c of conns) c.disconnect()
    await memNode.stop()
    await dataNode.stop()
    await server.dispose()
    dir.remove()
  }
}

/** The scenario record of a contention run: successes/s as ops/s, wait latency (p50, p99), attempts per success, the spread of successes. */
export function contentionScenario(id: string, title: string, rows: Scenario['rows']): Scenario {
  const columns: Record<string, Record<string, string>> = {}
  for (const r of rows) {
    const a = (r.extra.attempts ?? NaN) / (r.extra.successes ?? NaN)
    const s = shares(r.extra)
    columns[r.contender] = {
      'attempts/success': Number.isFinite(a) ? a.toFixed(2) : '—',
      'share min-max': Number.isFinite(s.min) ? `${s.min.toFixed(2)}-${s.max.toFixed(2)}` : '—',
    }
  }
  return {
    id,
    title,
    op: `one success: ${CLIENTS} clients in one process contend for one lock, each acquiring, releasing at once and going again; latency (p50, p99) is the time from asking to holding; Redis peers retry every ${RETRY.delay} ms + up to ${RETRY.jitter} ms jitter`,
    metric: 'ops',
    rows,
    columns,
    notes: [SHARE_NOTE],
  }
}

/** What the share column says. */
export const SHARE_NOTE = 'share min-max: the fewest and the most successes any one client had over the run, as multiples of the mean (1-1 is even; 0 is a client that never got it). A poller that takes the lock again right after releasing it wins on ops/s and starves the others.'
