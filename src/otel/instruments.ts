/**
 * zaris's metrics, by name: each made once per meter provider. Names start
 * with `zaris.`; durations are histograms in seconds (unit `s`), as
 * OpenTelemetry's semantic conventions ask of every duration. Attributes are
 * bounded (store, kind, mode, outcome, reason, and the caller's own key
 * group): never a raw key, which would make one series per key.
 *
 * Counts that change on every hold (holds active, ended, renewals, terms)
 * are kept here as plain numbers and read by the SDK when it collects
 * (observable instruments): a hold then costs the SDK nothing for them, where
 * a synchronous counter hashed its attributes on every add (bench/FINDINGS.md,
 * OpenTelemetry).
 *
 * @module
 */
import type { Attributes, Counter, Histogram, MeterProvider } from './api'

/** Counts by attribute set, read by an observable instrument's callback. */
export class Tally {
  /** Each attribute set once (the caller's cached object) with its count. */
  readonly #counts = new Map<Attributes, number>()

  /** Adds `n` to the count of `attributes` (an object the caller reuses: the map is keyed by it). */
  add(attributes: Attributes, n = 1): void {
    this.#counts.set(attributes, (this.#counts.get(attributes) ?? 0) + n)
  }

  /** Every count, as the SDK's callback reports them. */
  report(result: { observe(value: number, attributes?: Attributes): void }): void {
    for (const [attributes, n] of this.#counts) result.observe(n, attributes)
  }
}

/** The instruments of one meter provider. */
export interface Instruments {
  /** `zaris.acquire.duration`: from asking to holding or giving up, by `zaris.acquire.outcome`. */
  acquire: Histogram
  /** `zaris.hold.duration`: from holding to the end, by `zaris.hold.end_reason`. */
  held: Histogram
  /** `zaris.hold.ended`: holds ended, by `zaris.hold.end_reason`. */
  ended: Tally
  /** `zaris.hold.active`: holds of this process held now. */
  active: Tally
  /** `zaris.hold.renewals`: renewals answered, by `zaris.renewal.outcome` (`ok`, `failed`). */
  renewals: Tally
  /** `zaris.commit.duration`: a commit's round trip, by `zaris.commit.outcome` (`ok`, `conflict`, `error`). */
  commit: Histogram
  /** `zaris.election.terms`: terms won by this process's candidates. */
  terms: Tally
  /** `zaris.watch.reconnects`: a watch's stream to the store broke (and resumes). */
  reconnects: Counter
  /** `zaris.watch.lag`: events a watch had received and not yet handed to its reader, as each event came. */
  lag: Histogram
  /**
   * Cached attribute sets, by their values joined: every otel() of this
   * provider hands the SDK (and the tallies) one object per set.
   */
  sets: Map<string, Attributes>
}

/** Bucket bounds (s) for waits and holds: from a millisecond to five minutes. */
const LONG = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
/** Bucket bounds (s) for commits: OpenTelemetry's default for a client operation's duration. */
const SHORT = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** Bucket bounds for a watch's backlog, in events. */
const BACKLOG = [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 10000]

const made = new WeakMap<MeterProvider, Instruments>()

/** The instruments of `provider`'s `zaris` meter, made on first use. */
export function instrumentsOf(provider: MeterProvider, version: string): Instruments {
  let i = made.get(provider)
  if (i) return i
  const meter = provider.getMeter('zaris', version)
  const seconds = (name: string, description: string, bounds: number[]) => meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: bounds } })
  const tally = (name: string, description: string, unit: string, upDown = false) => {
    const t = new Tally()
    const options = { description, unit }
    ;(upDown ? meter.createObservableUpDownCounter(name, options) : meter.createObservableCounter(name, options)).addCallback((r) => t.report(r))
    return t
  }
  i = {
    acquire: seconds('zaris.acquire.duration', 'Time from asking for a lock, lease, permit or term to holding it or giving up.', LONG),
    held: seconds('zaris.hold.duration', 'Time a lock, lease, permit or term was held, from its acquire to its end.', LONG),
    ended: tally('zaris.hold.ended', 'Holds ended, by reason: released, closed, expired, stolen, lost.', '{hold}'),
    active: tally('zaris.hold.active', 'Holds held now by this process.', '{hold}', true),
    renewals: tally('zaris.hold.renewals', 'Renewals answered, by outcome: ok, or failed (lost, or the store unreachable).', '{renewal}'),
    commit: seconds('zaris.commit.duration', 'Round trip of a commit to the store, as the client sends it.', SHORT),
    terms: tally('zaris.election.terms', 'Election terms won.', '{term}'),
    reconnects: meter.createCounter('zaris.watch.reconnects', { description: "Times a watch's stream to the store broke, to resume where it was (no event lost).", unit: '{reconnect}' }),
    lag: meter.createHistogram('zaris.watch.lag', {
      description: 'Events a watch had received and its reader had not yet taken, as each event came (0: the reader keeps up).',
      unit: '{event}',
      advice: { explicitBucketBoundaries: BACKLOG },
    }),
    sets: new Map(),
  }
  made.set(provider, i)
  return i
}
