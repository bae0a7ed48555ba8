/**
 * The node's view of waits and holds, as the commits it serves show them:
 * the two histograms a client's `zaris/otel` records (`zaris.acquire.duration`,
 * `zaris.hold.duration`), as Prometheus text.
 *
 * - A hold begins with a commit that writes an owned entry with a new life
 *   (a lock, lease, term, shared hold or permit; not a wait line's place);
 *   it ends with a commit that deletes it (`released` when the commit checked
 *   its token, else `lost`) or gives its key a new life (`stolen` when the
 *   new one has an owner, else `lost`), or — no commit through this node
 *   having renewed it — when its TTL has run out (`expired`, counted at the
 *   next scrape).
 * - A wait ends with the commit that takes a hold: from the waiter's place in
 *   line (written by an earlier commit) when that commit deletes it, else the
 *   taking commit's own time (a try won at once, or parked at the node);
 *   `gave_up` when a place is deleted by a commit that takes nothing.
 *
 * What it cannot see: holds of a store that several nodes front, when a hold
 * is taken through one node and renewed or released through another (the
 * first counts it `expired` at its TTL); waits that ended with a plain `null`
 * (an acquire that did not queue). It keeps at most {@link MAX_TRACKED} holds
 * and places (the oldest are forgotten first, uncounted), and its labels are
 * bounded: no key, no namespace.
 *
 * @module
 */
import type { CommitResult, Op } from '../core/contract/adapter'
import { INTENT_PREFIX, isQueueKey, JOB_PREFIX, SHARED_OWNER } from '../core/contract/reserved'

/** The most holds and places in line followed at once. */
export const MAX_TRACKED = 10_000
/** Bucket bounds, in seconds, of both histograms: a millisecond to five minutes. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

interface Tracked {
  created: number
  /** When it began, in ms (`performance.now()`). */
  since: number
  /** When its TTL runs out unless renewed (ms), or `Infinity`. */
  until: number
}

/** A histogram by one label's value. */
class Histograms {
  readonly #by = new Map<string, { counts: number[]; sum: number; count: number }>()

  observe(label: string, seconds: number): void {
    let h = this.#by.get(label)
    if (!h) this.#by.set(label, (h = { counts: BUCKETS.map(() => 0), sum: 0, count: 0 }))
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) h.counts[i]!++
    h.sum += seconds
    h.count++
  }

  lines(name: string, label: string): string[] {
    const out: string[] = []
    for (const [value, h] of this.#by) {
      const l = `${label}="${value}"`
      BUCKETS.forEach((le, i) => out.push(`${name}_bucket{${l},le="${le}"} ${h.counts[i]}`))
      out.push(`${name}_bucket{${l},le="+Inf"} ${h.count}`, `${name}_sum{${l}} ${h.sum.toFixed(6)}`, `${name}_count{${l}} ${h.count}`)
    }
    return out
  }
}

/**
 * Waits and holds as a node's commits show them.
 *
 * @example
 * const holds = new HoldMetrics()
 * holds.commit('demo', ops, result, startedAt)
 * console.log(holds.render().join('\n'))
 */
export class HoldMetrics {
  readonly #holds = new Map<string, Tracked>()
  readonly #places = new Map<string, number>()
  readonly #waits = new Histograms()
  readonly #held = new Histograms()
  readonly #now: () => number

  constructor(now: () => number = () => performance.now()) {
    this.#now = now
  }

  /** Tells of a commit of namespace `ns` that was sent `ops` at `started` (ms) and answered `r`. */
  commit(ns: string, checks: ReadonlyArray<{ key: string; created?: number | null; revision?: number | null }>, ops: readonly Op[], r: CommitResult, started: number): void {
    if (!r.ok) return
    const now = this.#now()
    const id = (key: string) => `${ns}\u0000${key}`
    let took = false
    for (const e of r.entries) {
      if (isQueueKey(e.key)) {
        if (e.created === r.revision) remember(this.#places, id(e.key), now)
        continue
      }
      const held = this.#holds.get(id(e.key))
      // A take that checked the key absent found it free: its holder released it, and the store handed it
      // over in the release's own step (the release's answer may be counted after this one).
      const handedOver = () => checks.some((c) => c.key === e.key && ('created' in c ? c.created : c.revision) === null)
      if (held && held.created !== e.created) this.#end(id(e.key), e.owner === undefined ? 'lost' : handedOver() ? 'released' : 'stolen', now)
      if (e.owner === undefined || e.owner === SHARED_OWNER || e.key.startsWith(INTENT_PREFIX) || e.key.startsWith(JOB_PREFIX)) continue
      const until = e.ttl === undefined ? Infinity : now + e.ttl
      if (e.created !== r.revision) {
        const renewed = this.#holds.get(id(e.key))
        if (renewed) renewed.until = until
        continue
      }
      took = true
      remember(this.#holds, id(e.key), { created: e.created, since: now, until })
    }
    let waited: number | undefined
    for (const key of r.deleted) {
      const place = this.#places.get(id(key))
      if (place !== undefined) {
        this.#places.delete(id(key))
        if (took) waited = Math.min(waited ?? place, place)
        else this.#waits.observe('gave_up', (now - place) / 1000)
        continue
      }
      const held = this.#holds.get(id(key))
      // Released when the delete checked the key (its holder's token, or the revision it holds at); lost to a plain delete.
      if (held) this.#end(id(key), checks.some((c) => c.key === key && ('created' in c ? c.created === held.created : c.revision !== null)) ? 'released' : 'lost', now)
    }
    if (took) this.#waits.observe('held', (now - (waited ?? started)) / 1000)
  }

  /** The two histograms as Prometheus text lines, holds past their TTL counted `expired` first. */
  render(): string[] {
    const now = this.#now()
    for (const [id, h] of this.#holds) if (h.until <= now) this.#end(id, 'expired', h.until)
    return [
      '# HELP zaris_acquire_wait_seconds Time from asking to holding, as the commits through this node show it: outcome held (from the place in line, else the taking commit) or gave_up (a place left without the hold).',
      '# TYPE zaris_acquire_wait_seconds histogram',
      ...this.#waits.lines('zaris_acquire_wait_seconds', 'outcome'),
      '# HELP zaris_hold_seconds Time a lock, lease, term or permit was held, by how it ended: released, expired, stolen, lost.',
      '# TYPE zaris_hold_seconds histogram',
      ...this.#held.lines('zaris_hold_seconds', 'reason'),
    ]
  }

  #end(id: string, reason: string, at: number): void {
    const h = this.#holds.get(id)!
    this.#holds.delete(id)
    this.#held.observe(reason, Math.max(0, at - h.since) / 1000)
  }
}

/** Sets `id` in `map`, forgetting the oldest entry past {@link MAX_TRACKED}. */
function remember<T>(map: Map<string, T>, id: string, value: T): void {
  map.delete(id)
  map.set(id, value)
  if (map.size > MAX_TRACKED) map.delete(map.keys().next().value!)
}
