/**
 * The node's metrics, rendered as Prometheus text at `/metrics`: commits,
 * conflicts, idempotent replays, watchers, locks held, request latency, and
 * the waits and holds its commits show (./hold-metrics.ts).
 * Labels are bounded (route and status class), never namespaces or keys, so
 * a client cannot grow the series without limit.
 *
 * @module
 */
import { HoldMetrics } from './hold-metrics'

/** Upper bounds (seconds) of the request latency histogram. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

interface Histogram {
  counts: number[]
  sum: number
  count: number
}

/**
 * Counters and gauges of one node.
 *
 * @example
 * const metrics = new Metrics()
 * metrics.observe('commit', 200, 0.0012)
 * console.log(metrics.render({ watchers: 3, locksHeld: 1 }))
 */
export class Metrics {
  /** Commits applied. */
  commits = 0
  /** Commits refused because a check did not hold. */
  conflicts = 0
  /** Retried commits answered with their first result. */
  replays = 0
  /** Waits and holds, from the commits served. */
  readonly holds = new HoldMetrics()
  #requests = new Map<string, number>()
  #latency = new Map<string, Histogram>()
  #gauges = new Map<string, { help: string; read: () => number; type: 'gauge' | 'counter' }>()
  #cuts = new Map<string, number>()
  readonly #started = Date.now()

  /** Records one request: its route, status and duration in seconds. */
  observe(route: string, status: number, seconds: number): void {
    const k = `${route}\u0000${status}`
    this.#requests.set(k, (this.#requests.get(k) ?? 0) + 1)
    let h = this.#latency.get(route)
    if (!h) this.#latency.set(route, (h = { counts: BUCKETS.map(() => 0), sum: 0, count: 0 }))
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) h.counts[i]!++
    h.sum += seconds
    h.count++
  }

  /**
   * Adds a gauge read at each scrape (`name` without the `zaris_` prefix);
   * the listener adds its connections and buffered output this way.
   */
  gauge(name: string, help: string, read: () => number, type: 'gauge' | 'counter' = 'gauge'): void {
    this.#gauges.set(name, { help, read, type })
  }

  /** Counts a connection the node cut off (or refused), by why. */
  cut(reason: string): void {
    this.#cuts.set(reason, (this.#cuts.get(reason) ?? 0) + 1)
  }

  /** Connections cut off (or refused) for `reason` so far. */
  cuts(reason: string): number {
    return this.#cuts.get(reason) ?? 0
  }

  /** The Prometheus text exposition, with the gauges measured at scrape time. */
  render(gauges: { watchers: number; locksHeld: number; namespaces: number }): string {
    const out: string[] = []
    const metric = (name: string, type: string, help: string, lines: string[]) => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...lines)
    }
    metric('zaris_commits_total', 'counter', 'Commits applied.', [`zaris_commits_total ${this.commits}`])
    metric('zaris_commit_conflicts_total', 'counter', 'Commits refused because a check did not hold.', [`zaris_commit_conflicts_total ${this.conflicts}`])
    metric('zaris_commit_replays_total', 'counter', 'Retried commits answered with their original result.', [`zaris_commit_replays_total ${this.replays}`])
    metric('zaris_watchers', 'gauge', 'Open watch streams.', [`zaris_watchers ${gauges.watchers}`])
    metric('zaris_locks_held', 'gauge', 'Holds of locks, leases and candidacies, as locks.query() lists them (each shared holder counts; wait lines and permits do not).', [`zaris_locks_held ${gauges.locksHeld}`])
    metric('zaris_namespaces', 'gauge', 'Namespaces opened since start.', [`zaris_namespaces ${gauges.namespaces}`])
    for (const [name, g] of this.#gauges) metric(`zaris_${name}`, g.type, g.help, [`zaris_${name} ${g.read()}`])
    metric(
      'zaris_connections_cut_total',
      'counter',
      'Connections the node cut off or refused, by reason (output-hard, output-soft, send-timeout, output-total, too-many, idle).',
      [...this.#cuts].map(([reason, n]) => `zaris_connections_cut_total{reason="${reason}"} ${n}`),
    )
    metric('zaris_uptime_seconds', 'gauge', 'Seconds since the node started.', [`zaris_uptime_seconds ${((Date.now() - this.#started) / 1000).toFixed(3)}`])
    metric(
      'zaris_requests_total',
      'counter',
      'HTTP requests by route and status.',
      [...this.#requests].map(([k, n]) => {
        const [route, status] = k.split('\u0000')
        return `zaris_requests_total{route="${route}",status="${status}"} ${n}`
      }),
    )
    const latency: string[] = []
    for (const [route, h] of this.#latency) {
      BUCKETS.forEach((le, i) => latency.push(`zaris_request_duration_seconds_bucket{route="${route}",le="${le}"} ${h.counts[i]}`))
      latency.push(`zaris_request_duration_seconds_bucket{route="${route}",le="+Inf"} ${h.count}`)
      latency.push(`zaris_request_duration_seconds_sum{route="${route}"} ${h.sum.toFixed(6)}`)
      latency.push(`zaris_request_duration_seconds_count{route="${route}"} ${h.count}`)
    }
    metric('zaris_request_duration_seconds', 'histogram', 'Request latency by route (watch: until the stream opens).', latency)
    out.push(...this.holds.render())
    return out.join('\n') + '\n'
  }
}
