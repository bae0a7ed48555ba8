/**
 * Counters (issue 16): `counters.increment` is one commit of the contract's
 * `add` op, which every store applies in place. 100 increments of one counter
 * at once through zaris memory, the Redis adapter and a node (memory), against
 * ioredis `INCR` on the same redis-server; one client's increments back to
 * back (round trips) through the Redis adapter against `INCR`; and on one etcd
 * member, the etcd adapter against the usual etcd increment (a get and a
 * compare-and-put transaction on the key's mod revision, retried until it holds).
 *
 * Commits and refused commits are counted at the client (every zaris row) and,
 * for the node, on the node itself (its `/metrics`), so a retry loop anywhere
 * would show. The etcd rows run at most 3 trials (1 in a quick run): a batch of
 * the raw recipe takes seconds at 100-way contention.
 *
 * @module
 */
import { Etcd3 } from 'etcd3'
import { Redis } from 'ioredis'
import { Client, connect, type Adapter } from 'zaris'
import { etcdAdapter } from 'zaris/etcd'
import { httpAdapter } from 'zaris/http'
import { redisAdapter } from 'zaris/redis'
import { commitCounter } from '../../test/conformance/counting'
import { alternate } from '../lib/compare'
import { loop, type Trial } from '../lib/measure'
import type { Scenario } from '../lib/report'
import { etcd as startEtcd, node, redis as startRedis } from '../lib/procs'
import type { BenchContext } from './context'

/** Increments of one counter sent at once. */
export const CONCURRENT = 100

/** Back-to-back batches of {@link CONCURRENT} increments for `ms`; one op is one increment, latency is a whole batch's. */
async function batches(increment: () => Promise<unknown>, ms: number, count?: () => Promise<Record<string, number>>): Promise<Trial> {
  const before = await count?.()
  const t = await loop(() => Promise.all(Array.from({ length: CONCURRENT }, increment)), ms)
  const after = await count?.()
  const extra: Record<string, number> = { increments: t.ops * CONCURRENT }
  for (const k of Object.keys(after ?? {})) extra[k] = after![k]! - before![k]!
  return { ...t, ops: t.ops * CONCURRENT, extra }
}

/** A zaris client on `inner` whose commits (and refused commits) are counted. */
function counted(inner: Adapter): { client: Client; count: () => Promise<Record<string, number>> } {
  const c = commitCounter(inner)
  return { client: new Client(c.adapter), count: async () => ({ commits: c.commits(), rejected: c.refused() }) }
}

/** The node's own counts of applied and refused commits, from its Prometheus text. */
async function nodeCounts(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const read = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? NaN)
  const conflicts = read('zaris_commit_conflicts_total')
  return { commits: read('zaris_commits_total') + conflicts, rejected: conflicts }
}

/** Per 100 increments: commits sent and commits refused. */
function perHundred(rows: Scenario['rows']): Record<string, Record<string, string>> {
  const columns: Record<string, Record<string, string>> = {}
  for (const r of rows) {
    const per = (k: string) => (r.extra[k] === undefined ? '—' : ((r.extra[k]! * 100) / r.extra.increments!).toFixed(1))
    columns[r.contender] = { 'commits per 100': per('commits'), 'rejected per 100': per('rejected') }
  }
  return columns
}

export async function counterScenarios(ctx: BenchContext): Promise<Scenario[]> {
  const server = await startRedis()
  const memNode = await node()
  const conns: Redis[] = []
  const clients: Client[] = []
  const conn = () => {
    const r = new Redis({ host: '127.0.0.1', port: server.port })
    conns.push(r)
    return r
  }
  try {
    const mem = await connect('zaris://inproc/bench-counters')
    clients.push(mem)
    const memCount = async () => ({})
    const redis = counted(await redisAdapter({ client: conn(), namespace: 'bench-counters' }))
    const viaNode = counted(httpAdapter({ endpoints: [memNode.url], namespace: 'bench-counters' }))
    clients.push(redis.client, viaNode.client)
    const incr = conn()
    const dur = ctx.quick ? 200 : 500
    ctx.log(`counters: ${CONCURRENT} at once`)
    const many = await alternate(
      [
        { label: 'zaris memory', zaris: true, trial: () => batches(() => mem.counters.increment('hits'), dur, memCount) },
        { label: 'zaris redis adapter', zaris: true, trial: () => batches(() => redis.client.counters.increment('hits'), dur, redis.count) },
        { label: 'zaris node (memory)', zaris: true, trial: () => batches(() => viaNode.client.counters.increment('hits'), dur, () => nodeCounts(memNode.url)) },
        { label: 'ioredis INCR', zaris: false, trial: () => batches(() => incr.incr('bench:hits'), dur) },
      ],
      ctx.trials,
    )
    ctx.log('counters: one client, back to back')
    const one = await alternate(
      [
        { label: 'zaris redis adapter', zaris: true, trial: () => loop(() => redis.client.counters.increment('one'), dur) },
        { label: 'zaris node (memory)', zaris: true, trial: () => loop(() => viaNode.client.counters.increment('one'), dur) },
        { label: 'ioredis INCR', zaris: false, trial: () => loop(() => incr.incr('bench:one'), dur) },
      ],
      ctx.trials,
    )
    const out: Scenario[] = [
      {
        id: 'counters-100',
        title: `Counters, ${CONCURRENT} increments at once`,
        op: `one increment of one counter, ${CONCURRENT} sent at once and awaited together, batch after batch (latency: a whole batch); zaris: counters.increment, one commit of the add op; ioredis: INCR, all on one connection`,
        metric: 'ops',
        rows: many,
        columns: perHundred(many),
        notes: ['commits and rejected: counted at the client for the memory and Redis rows, on the node itself (/metrics: zaris_commits_total + zaris_commit_conflicts_total) for the node row.'],
      },
      {
        id: 'counters-1',
        title: 'Counters, one client',
        op: 'one increment, back to back (one round trip each): counters.increment through the Redis adapter and a node, against ioredis INCR on the same redis-server',
        metric: 'ops',
        rows: one,
      },
    ]
    out.push(await etcdCounters(ctx, dur))
    return out
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()))
    for (const c of conns) c.disconnect()
    await memNode.stop()
    await server.dispose()
  }
}

const ETCD_TITLE = `Counters on etcd, ${CONCURRENT} increments at once`

/** The etcd adapter's add against get + compare-and-put, retried, through etcd3 on one etcd member. */
async function etcdCounters(ctx: BenchContext, dur: number): Promise<Scenario> {
  const op = `one increment of one counter, ${CONCURRENT} at once (latency: a whole batch), on one local etcd member (fsync on), through etcd3`
  let etcd: Awaited<ReturnType<typeof startEtcd>>
  try {
    etcd = await startEtcd()
  } catch (err) {
    const why = `etcd could not be started (${(err as Error).message.split('\n')[0]})`
    return { id: 'counters-etcd', title: ETCD_TITLE, op, metric: 'ops', rows: [], skipped: why }
  }
  const raw = new Etcd3({ hosts: etcd.url })
  const zaris = counted(await etcdAdapter({ url: `etcd://${etcd.url.replace(/^http:\/\//, '')}/bench-counters` }))
  try {
    let txns = 0
    let refused = 0
    const casIncrement = async () => {
      for (;;) {
        const got = await raw.get('bench:hits').exec()
        const kv = got.kvs[0]
        const next = String(Number(kv?.value.toString() ?? '0') + 1)
        const cmp = kv ? raw.if('bench:hits', 'Mod', '==', kv.mod_revision) : raw.if('bench:hits', 'Create', '==', 0)
        txns++
        if ((await cmp.then(raw.put('bench:hits').value(next)).commit()).succeeded) return
        refused++
      }
    }
    ctx.log('counters: etcd')
    const rows = await alternate(
      [
        { label: 'zaris etcd adapter', zaris: true, trial: () => batches(() => zaris.client.counters.increment('hits'), dur, zaris.count) },
        { label: 'etcd get + txn compare-and-put, retried', zaris: false, trial: () => batches(casIncrement, dur, async () => ({ commits: txns, rejected: refused })) },
      ],
      Math.min(ctx.trials, ctx.quick ? 1 : 3),
    )
    return {
      id: 'counters-etcd',
      title: ETCD_TITLE,
      op,
      metric: 'ops',
      rows,
      columns: perHundred(rows),
      notes: ['commits: zaris commits sent (the adapter may run more than one etcd transaction per commit); for the raw recipe, transactions sent, and rejected the ones whose compare failed.'],
    }
  } finally {
    await zaris.client.close()
    raw.close()
    await etcd.stop()
  }
}
