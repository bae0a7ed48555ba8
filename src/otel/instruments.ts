/**
 * zaris's metrics, by name: each made once per meter provider. Names start
 * with `zaris.`; durations are histograms in seconds (unit `s`), as
 * OpenTelemetry's semantic conventions ask of every duration. Attributes are
 * bounded (store, kind, mode, outcome, reason, and the caller's own key
 * group): never a raw key, which would make one series per key.
 *
 * @module
 */
import type { Counter, Histogram, MeterProvider } from './api'

/** The instruments of one meter provider. */
export interface Instruments {
  /** `zaris.acquire.duration`: from asking to holding or giving up, by `zaris.acquire.outcome`. */
  acquire: Histogram
  /** `zaris.hold.duration`: from holding to the end, by `zaris.hold.end_reason`. */
  held: Histogram
  /** `zaris.hold.ended`: holds ended, by `zaris.hold.end_reason`. */
  ended: Counter
  /** `zaris.hold.active`: holds of this process held now. */
  active: Counter
  /** `zaris.hold.renewals`: renewals answered, by `zaris.renewal.outcome` (`ok`, `failed`). */
  renewals: Counter
  /** `zaris.commit.duration`: a commit's round trip, by `zaris.commit.outcome` (`ok`, `conflict`, `error`). */
  commit: Histogram
  /** `zaris.election.terms`: terms won by this process's candidates. */
  terms: Counter
}

/** Bucket bounds (s) for waits and holds: from a millisecond to five minutes. */
const LONG = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
/** Bucket bounds (s) for commits: OpenTelemetry's default for a client operation's duration. */
const SHORT = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

const made = new WeakMap<MeterProvider, Instruments>()

/** The instruments of `provider`'s `zaris` meter, made on first use. */
export function instrumentsOf(provider: MeterProvider, version: string): Instruments {
  let i = made.get(provider)
  if (i) return i
  const meter = provider.getMeter('zaris', version)
  const seconds = (name: string, description: string, bounds: number[]) => meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: bounds } })
  i = {
    acquire: seconds('zaris.acquire.duration', 'Time from asking for a lock, lease, permit or term to holding it or giving up.', LONG),
    held: seconds('zaris.hold.duration', 'Time a lock, lease, permit or term was held, from its acquire to its end.', LONG),
    ended: meter.createCounter('zaris.hold.ended', { description: 'Holds ended, by reason: released, closed, expired, stolen, lost.', unit: '{hold}' }),
    active: meter.createUpDownCounter('zaris.hold.active', { description: 'Holds held now by this process.', unit: '{hold}' }),
    renewals: meter.createCounter('zaris.hold.renewals', { description: 'Renewals answered, by outcome: ok, or failed (lost, or the store unreachable).', unit: '{renewal}' }),
    commit: seconds('zaris.commit.duration', "Round trip of a commit to the store, as the client sends it.", SHORT),
    terms: meter.createCounter('zaris.election.terms', { description: 'Election terms won.', unit: '{term}' }),
  }
  made.set(provider, i)
  return i
}
