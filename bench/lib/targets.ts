/**
 * Issue 7's targets, checked against the rows of one run.
 *
 * @module
 */
import type { Row } from './compare'
import { shares } from './locks'
import { fmtBytes, fmtMs, fmtOps, fmtRatio, type Scenario, type Target } from './report'

/** The ratio a target compares, the limit and the direction it must be on. */
interface Spec {
  text: string
  scenario: string
  zaris: string
  peer: string
  /** `ops`: zaris ops/s ÷ peer ops/s must be >= limit. `latency`: zaris p50 ÷ peer p50 must be <= limit. `cost`: zaris p50 ÷ peer p50 (per-op cost, same store at two sizes) <= limit. */
  kind: 'ops' | 'latency' | 'cost'
  limit: number
  chart: string
}

/** The bundle scenario's rows of what a Vite app's tabs load (bench/scenarios/bundle.ts), which issue 30's targets read. */
export const PAGE_ELECTION = 'Vite app: election over zaris://idb'
export const PAGE_FAMILY = 'Vite app: locks + election + watch over zaris://idb'
/** The same election through the election-only entry, zaris/elect (no client). */
export const PAGE_ELECTION_ONLY = 'Vite app: election over zaris://idb, zaris/elect'
/** The locks + election + watch app through the tabs entry, zaris/tabs (no client). */
export const PAGE_FAMILY_TABS = 'Vite app: locks + election + watch over zaris://idb, zaris/tabs'

const specs: Spec[] = [
  { text: 'handover with 8 waiters, node (memory): p50 ahead of etcd3 lock() waiting on etcd', scenario: 'handover-8', zaris: 'zaris node (memory)', peer: 'etcd3 lock(), waiting on a watch', kind: 'latency', limit: 1, chart: 'handover: node vs etcd3 lock()' },
  { text: 'memory acquire+release >= 0.5x async-mutex (TTL and fencing on)', scenario: 'memory', zaris: 'zaris memory', peer: 'async-mutex', kind: 'ops', limit: 0.5, chart: 'memory vs async-mutex' },
  { text: 'IndexedDB acquire+release >= 0.8x two readwrite transactions', scenario: 'one-tab', zaris: 'zaris idb', peer: '2 IndexedDB readwrite txs', kind: 'ops', limit: 0.8, chart: 'IndexedDB vs 2-tx ceiling' },
  { text: 'cross-tab handoff <= 1.0x (tx + BroadcastChannel message + tx) (issue 30)', scenario: 'handoff', zaris: 'zaris idb', peer: 'tx + BroadcastChannel msg + tx', kind: 'latency', limit: 1, chart: 'handoff vs tx+msg+tx' },
  { text: 'cross-tab handoff <= 3x navigator.locks (issue 30)', scenario: 'handoff', zaris: 'zaris idb', peer: 'navigator.locks', kind: 'latency', limit: 3, chart: 'handoff vs navigator.locks' },
  { text: 'cross-tab watch latency <= 2x a BroadcastChannel message (issue 30)', scenario: 'watch', zaris: 'zaris idb watch', peer: 'BroadcastChannel message', kind: 'latency', limit: 2, chart: 'watch vs a message' },
  { text: 'zaris/tabs: IndexedDB acquire+release >= 0.8x two readwrite transactions (issue 30)', scenario: 'one-tab', zaris: 'zaris/tabs', peer: '2 IndexedDB readwrite txs', kind: 'ops', limit: 0.8, chart: 'zaris/tabs vs 2-tx ceiling' },
  { text: 'zaris/tabs: cross-tab handoff <= 1.0x (tx + BroadcastChannel message + tx) (issue 30)', scenario: 'handoff', zaris: 'zaris/tabs', peer: 'tx + BroadcastChannel msg + tx', kind: 'latency', limit: 1, chart: 'zaris/tabs handoff vs tx+msg+tx' },
  { text: 'zaris/tabs: cross-tab handoff <= 3x navigator.locks (issue 30)', scenario: 'handoff', zaris: 'zaris/tabs', peer: 'navigator.locks', kind: 'latency', limit: 3, chart: 'zaris/tabs handoff vs navigator.locks' },
  { text: 'zaris/tabs: cross-tab watch latency <= 2x a BroadcastChannel message (issue 30)', scenario: 'watch', zaris: 'zaris/tabs watch', peer: 'BroadcastChannel message', kind: 'latency', limit: 2, chart: 'zaris/tabs watch vs a message' },
  { text: 'holder tab closed -> next holder no slower than navigator.locks', scenario: 'holder-closed', zaris: 'zaris idb lock', peer: 'navigator.locks', kind: 'latency', limit: 1, chart: 'holder tab closed vs Web Locks' },
  { text: 'leader tab closed -> new leader no slower than broadcast-channel', scenario: 'leader-closed', zaris: 'zaris idb election', peer: 'broadcast-channel LeaderElection', kind: 'latency', limit: 1, chart: 'leader tab closed vs broadcast-channel' },
  { text: 'leader tab closed -> new leader no slower than broadcast-channel (zaris/elect: `elected`, at the grant; bc: awaitLeadership)', scenario: 'leader-closed', zaris: 'zaris/elect, elected', peer: 'broadcast-channel LeaderElection', kind: 'latency', limit: 1, chart: 'leader tab closed (zaris/elect) vs broadcast-channel' },
  { text: 'through a node (memory): acquire+release >= 1.0x redlock', scenario: 'remote-1', zaris: 'zaris node (memory)', peer: 'redlock', kind: 'ops', limit: 1, chart: 'node (memory) vs redlock' },
  { text: '16 clients with wait, node (memory): >= 2x the successes/s of Redis try-acquire polling', scenario: 'remote-16', zaris: 'zaris node (memory), wait', peer: 'Redis SET NX polling', kind: 'ops', limit: 2, chart: '16 clients: node vs Redis polling' },
  { text: 'durable node (--data): acquire+release >= 2x etcd\'s raw transaction cycle', scenario: 'durable', zaris: 'zaris node (--data)', peer: 'etcd txn (lease, put-if-absent)', kind: 'ops', limit: 2, chart: '--data node vs etcd txn' },
  { text: 'etcd adapter: acquire+release >= 1.0x etcd3 lock()', scenario: 'etcd-1', zaris: 'zaris etcd adapter', peer: 'etcd3 lock()', kind: 'ops', limit: 1, chart: 'etcd adapter vs etcd3 lock()' },
  { text: 'Postgres adapter acquire+release >= 1.0x pg_try_advisory_lock + unlock round trips (issue 33; the advisory lock has no TTL, token or pooler safety)', scenario: 'postgres-1', zaris: 'zaris postgres adapter', peer: 'pg_try_advisory_lock + unlock', kind: 'ops', limit: 1, chart: 'Postgres adapter vs advisory lock' },
  { text: 'Redis adapter acquire+release >= 0.8x redlock (issue 16)', scenario: 'redis-1', zaris: 'zaris redis adapter', peer: 'redlock', kind: 'ops', limit: 0.8, chart: 'Redis adapter vs redlock' },
  { text: 'Redis adapter over node-redis: acquire+release >= 0.9x over ioredis (issue 36)', scenario: 'redis-1', zaris: 'zaris redis adapter (node-redis)', peer: 'zaris redis adapter', kind: 'ops', limit: 0.9, chart: 'Redis adapter: node-redis vs ioredis' },
  { text: 'counters through the Redis adapter >= 0.5x ioredis INCR round trips (issue 16)', scenario: 'counters-1', zaris: 'zaris redis adapter', peer: 'ioredis INCR', kind: 'ops', limit: 0.5, chart: 'Redis counters vs INCR' },
  { text: 'flat per-op cost up to 100k keys, memory (<= 1.2x the 10-key figure)', scenario: 'scale-memory', zaris: '100k other keys', peer: '10 other keys', kind: 'cost', limit: 1.2, chart: 'memory: 100k keys vs 10' },
  { text: 'file:// store: acquire+release >= 2x proper-lockfile (issue 34)', scenario: 'file-1', zaris: 'zaris file://', peer: 'proper-lockfile', kind: 'ops', limit: 2, chart: 'file:// vs proper-lockfile' },
  { text: 'file:// store: killed holder -> next holder >= 20x faster than proper-lockfile\'s default (issue 34)', scenario: 'file-killed', zaris: 'zaris file://', peer: 'proper-lockfile (stale 10 s)', kind: 'latency', limit: 0.05, chart: 'killed holder: file:// vs proper-lockfile' },
  { text: 'flat per-op cost up to 100k keys, --data node (<= 1.2x the 10-key figure)', scenario: 'scale-data', zaris: '100k other keys', peer: '10 other keys', kind: 'cost', limit: 1.2, chart: '--data node: 100k keys vs 10' },
]

function find(scenarios: Scenario[], id: string, label: string): { s?: Scenario; r?: Row } {
  const s = scenarios.find((x) => x.id === id)
  return { s, r: s?.rows.find((x) => x.contender === label) }
}

export function evaluateTargets(scenarios: Scenario[]): Target[] {
  const out: Target[] = []
  for (const spec of specs) {
    const z = find(scenarios, spec.scenario, spec.zaris)
    const p = find(scenarios, spec.scenario, spec.peer)
    if (!z.s) continue // the group did not run (BENCH_ONLY)
    if (z.s.skipped || !z.r || !p.r) {
      out.push({ text: spec.text, measured: `not measured: ${z.s.skipped ?? 'a row is missing'}`, met: null })
      continue
    }
    if (spec.kind === 'ops') {
      const r = z.r.opsPerSec / p.r.opsPerSec
      out.push({
        text: spec.text,
        measured: `${fmtRatio(r)} (${fmtOps(z.r.opsPerSec)} vs ${fmtOps(p.r.opsPerSec)} ops/s)`,
        met: r >= spec.limit,
        chart: { label: spec.chart, value: r, goal: spec.limit },
      })
    } else if (spec.kind === 'latency') {
      const r = z.r.p50 / p.r.p50
      out.push({
        text: spec.text,
        measured: `${fmtRatio(r)} (p50 ${fmtMs(z.r.p50)} vs ${fmtMs(p.r.p50)})`,
        met: r <= spec.limit,
        chart: { label: spec.chart, value: 1 / r, goal: 1 / spec.limit },
      })
    } else {
      const r = z.r.p50 / p.r.p50
      out.push({
        text: spec.text,
        measured: `${fmtRatio(r)} (p50 per op ${fmtMs(z.r.p50)} vs ${fmtMs(p.r.p50)}; mean ${fmtMs(1000 / z.r.opsPerSec)} vs ${fmtMs(1000 / p.r.opsPerSec)})`,
        met: r <= spec.limit,
        chart: { label: spec.chart, value: 1 / r, goal: 1 / spec.limit },
      })
    }
  }
  // Issue 16: a handover through a node in about two round trips.
  const handover = find(scenarios, 'handover-8', 'zaris node (memory)')
  if (handover.s && !handover.s.skipped && handover.r) {
    out.push({ text: 'handover with 8 waiters, node (memory): p50 <= 1.5 ms (quiet machine)', measured: `p50 ${fmtMs(handover.r.p50)}, p99 ${fmtMs(handover.r.p99)}`, met: handover.r.p50 <= 1.5 })
  }
  // 16 clients: at most 2 attempts per success.
  const many = find(scenarios, 'remote-16', 'zaris node (memory), wait')
  if (many.s && !many.s.skipped && many.r) {
    const a = (many.r.extra.attempts ?? NaN) / (many.r.extra.successes ?? NaN)
    out.push({ text: '16 clients with wait, node (memory): <= 2 attempts per success', measured: `${a.toFixed(2)} attempts per success`, met: a <= 2 })
  }
  // Issue 16: 100 increments at once through a node are about 100 commits, none refused (counted on the node).
  const inc = find(scenarios, 'counters-100', 'zaris node (memory)')
  if (inc.s && !inc.s.skipped && inc.r) {
    const per = (k: string) => ((inc.r!.extra[k] ?? NaN) * 100) / (inc.r!.extra.increments ?? NaN)
    out.push({
      text: '100 concurrent increments through a node: <= 110 commits, 0 rejected (issue 16)',
      measured: `${per('commits').toFixed(1)} commits and ${per('rejected').toFixed(1)} rejected per 100 increments (on the node's /metrics)`,
      met: per('commits') <= 110 && per('rejected') === 0,
    })
  }
  out.push(...contentionTargets(scenarios))
  // Issue 30: what the tabs of a Vite app load, every file, gzipped; and how many files.
  for (const [label, kb, files] of [[PAGE_ELECTION, 8_000, 3], [PAGE_ELECTION_ONLY, 8_000, 3], [PAGE_FAMILY, 14_000, 4], [PAGE_FAMILY_TABS, 14_000, 4]] as const) {
    const page = find(scenarios, 'bundle', label)
    if (!page.s || !page.r) continue
    const gz = page.r.extra.gzip ?? NaN
    const n = page.r.extra.files ?? NaN
    out.push({
      text: `${label}: <= ${kb / 1000} kB gz in <= ${files} files (issue 30)`,
      measured: `${fmtBytes(gz)} gz in ${n} files`,
      met: gz <= kb && n <= files,
      chart: { label: `${label.replace('Vite app: ', '')}: ${kb / 1000} kB / size`, value: kb / gz, goal: 1 },
    })
  }
  // Issue 16: what a page loads on top of the entry to talk to a node.
  const client = find(scenarios, 'bundle', "connect('zaris://host'): its HTTP client chunk")
  if (client.s && client.r) {
    const gz = client.r.extra.gzip ?? NaN
    out.push({ text: "connect('zaris://host'): the HTTP client chunk <= 10 kB min+gzip (issue 16)", measured: `${fmtBytes(gz)} min+gzip (${gz} bytes)`, met: gz <= 10_000 })
  }
  return out
}

/** Issue 31: under contention, as fast as a polling loop (a share of it), and fair. */
function contentionTargets(scenarios: Scenario[]): Target[] {
  const out: Target[] = []
  const ratio = (text: string, id: string, zaris: string, peer: string, limit: number, chart: string) => {
    const z = find(scenarios, id, zaris)
    const p = find(scenarios, id, peer)
    if (!z.s || z.s.skipped || !z.r || !p.r) return
    const r = z.r.opsPerSec / p.r.opsPerSec
    out.push({ text, measured: `${fmtRatio(r)} (${fmtOps(z.r.opsPerSec)} vs ${fmtOps(p.r.opsPerSec)} ops/s)`, met: r >= limit, chart: { label: chart, value: r, goal: limit } })
  }
  const fair = (text: string, id: string, zaris: string, tailPeer?: string) => {
    const z = find(scenarios, id, zaris)
    if (!z.s || z.s.skipped || !z.r) return
    const s = shares(z.r.extra)
    const even = s.min >= 0.5 && s.max <= 2
    const peer = tailPeer === undefined ? undefined : find(scenarios, id, tailPeer).r
    const tail = peer ? z.r.p99 / peer.p99 : NaN
    const measured = `shares ${s.min.toFixed(2)}-${s.max.toFixed(2)} of the mean` + (peer ? `; p99 ${fmtMs(z.r.p99)} vs ${fmtMs(peer.p99)} (${fmtRatio(tail)})` : '')
    out.push({ text, measured, met: even && (peer === undefined || tail <= 0.25) })
  }
  ratio('16 clients, node (memory): >= 0.5x Redis SET NX polling (issue 31)', 'remote-16', 'zaris node (memory), wait', 'Redis SET NX polling', 0.5, '16 clients: node vs SET NX polling')
  fair('16 clients, node (memory): p99 time-to-hold <= 0.25x redlock\'s, every client within 2x of the mean share (issue 31)', 'remote-16', 'zaris node (memory), wait', 'redlock, retrying')
  ratio('16 clients, Redis adapter: >= 0.3x Redis SET NX polling (issue 31)', 'redis-16', 'zaris redis adapter, wait', 'Redis SET NX polling', 0.3, '16 clients: Redis adapter vs polling')
  fair('16 clients, Redis adapter: p99 <= 0.25x redlock\'s, every client within 2x of the mean share (issue 31)', 'redis-16', 'zaris redis adapter, wait', 'redlock, retrying')
  ratio('16 clients, --data node: >= 2x etcd3 lock() (issue 31)', 'durable-16', 'zaris node (--data), wait', 'etcd3 lock(), waiting on a watch', 2, '16 clients: --data node vs etcd3 lock()')
  ratio('semaphore, 8 clients / 3 permits: >= 0.5x redis-semaphore (issue 31)', 'redis-sem-8', 'zaris semaphore, wait', 'redis-semaphore, retrying every 10 ms', 0.5, 'semaphore 8/3 vs redis-semaphore')
  fair('semaphore, 8 clients / 3 permits: every client within 2x of the mean share (issue 31)', 'redis-sem-8', 'zaris semaphore, wait')
  ratio('semaphore, one client: >= 0.6x redis-semaphore (issue 31)', 'redis-sem-1', 'zaris semaphore (redis adapter)', 'redis-semaphore Semaphore', 0.6, 'semaphore, one client vs redis-semaphore')
  const handover = find(scenarios, 'handover-8', 'zaris node (memory)')
  if (handover.s && !handover.s.skipped && handover.r) {
    out.push({ text: 'handover with 8 waiters, node (memory): p50 <= 0.5 ms (issue 31)', measured: `p50 ${fmtMs(handover.r.p50)}, p99 ${fmtMs(handover.r.p99)}`, met: handover.r.p50 <= 0.5 })
  }
  return out
}
