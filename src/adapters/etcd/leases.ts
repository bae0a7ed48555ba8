/**
 * TTLs on etcd leases, shared.
 *
 * An etcd lease counts whole seconds, and the cluster raises any TTL below
 * its minimum (1.5 election timeouts, 2 s with etcd's default timing) to that
 * minimum. A lease never ends before it was granted + its TTL: the leader
 * starts counting when it applies the grant, which is after the request was
 * sent, and a new leader restarts every lease's count. So a lease granted
 * for N seconds, from a request sent at `s` on this process's monotonic
 * clock, is alive at least until `s + N s` — its *guaranteed end*.
 *
 * An entry with TTL `t`, written by a request sent at `now`, may use any
 * lease whose guaranteed end is at or after `now + t`: it never frees
 * before its TTL. To free it not much later, a lease is shared only while
 * it would keep an entry at most `SHARE_MS` past that: leases are granted
 * for `N = ceil((t + SHARE_MS) / 1000)` s and one lease of each N serves
 * every TTL'd write of this connection for up to `SHARE_MS` after its grant.
 * Most writes so find a lease ready and are one round trip (the
 * transaction); a grant costs one more, at most once per `SHARE_MS` per
 * TTL in use.
 *
 * How late an entry frees: up to `N s − t < SHARE_MS + 1 s` after its TTL
 * (or the cluster's minimum lease, if that is longer), plus the leader's
 * expiry check (every 500 ms) and the revocation's own commit — and after a
 * leader change, up to one more full lease TTL, since the new leader
 * restarts every lease. {@link LeasePool.granularity} is that bound without
 * the leader change.
 *
 * Leases are never revoked by zaris: an entry's delete or overwrite detaches
 * it, and the lease ends by itself. At most one lease per N per SHARE_MS is
 * granted, each living N s, so the number alive is bounded by the TTLs in use.
 *
 * @module
 */
import { systemClock } from '../../core/time/clock'

/** How long a lease is handed out after its grant, in ms. */
export const SHARE_MS = 500
/** etcd's lessor checks for expired leases every 500 ms. */
const EXPIRY_CHECK_MS = 500

export interface Granted {
  id: string
  /** The TTL etcd granted, in seconds (raised to the cluster's minimum). */
  ttl: number
}

interface Lease {
  id: string
  /** On this process's monotonic clock: the lease is alive at least until then. */
  guaranteedEnd: number
}

export class LeasePool {
  readonly #grant: (seconds: number) => Promise<Granted>
  /** Per requested lease length in seconds: the newest lease and the grant in flight. */
  readonly #current = new Map<number, Lease>()
  readonly #pending = new Map<number, Promise<Lease>>()
  /** Leases of this pool still alive, by id, for the TTL left that reads report. */
  readonly #known = new Map<string, number>()
  /** The cluster's minimum lease TTL in seconds, learnt from the first grant. */
  #minimum = 1

  constructor(grant: (seconds: number) => Promise<Granted>) {
    this.#grant = grant
  }

  /**
   * How late (ms) an entry may free after its TTL, outside leader changes:
   * the lease rounding and sharing, and etcd's expiry check.
   */
  get granularity(): number {
    return Math.max(this.#minimum * 1000, SHARE_MS + 1000) + EXPIRY_CHECK_MS
  }

  /** Grants a short lease to learn the cluster's minimum TTL (and that etcd answers). */
  async probe(): Promise<void> {
    const g = await this.#grant(1)
    this.#minimum = Math.max(1, g.ttl)
  }

  /**
   * A lease that keeps an entry written by a request sent now for at least
   * `ttl` ms, and at most about `share` ms more (plus the rounding to seconds).
   */
  async leaseFor(ttl: number, share = SHARE_MS): Promise<string> {
    const seconds = Math.max(this.#minimum, Math.ceil((ttl + share) / 1000))
    for (let attempt = 0; ; attempt++) {
      const now = systemClock.now()
      const current = this.#current.get(seconds)
      if (current && current.guaranteedEnd >= now + ttl) return current.id
      let pending = this.#pending.get(seconds)
      if (!pending) {
        pending = this.#fresh(seconds)
        this.#pending.set(seconds, pending)
        void pending.then(
          () => this.#pending.delete(seconds),
          () => this.#pending.delete(seconds),
        )
      }
      const lease = await pending
      // A grant slower than SHARE_MS (a leader election) gives a lease too short for this TTL: ask again.
      if (lease.guaranteedEnd >= systemClock.now() + ttl) return lease.id
      if (attempt >= 5) throw new Error(`no lease long enough for a ${ttl} ms TTL after ${attempt + 1} grants: etcd answers too slowly`)
    }
  }

  /** Milliseconds a lease of this pool is sure to live, or `undefined` for leases it did not grant. */
  left(id: string): number | undefined {
    const end = this.#known.get(id)
    return end === undefined ? undefined : Math.max(0, end - systemClock.now())
  }

  /** etcd no longer has this lease (it expired before a retried request used it). */
  forget(id: string): void {
    this.#known.delete(id)
    for (const [n, lease] of this.#current) if (lease.id === id) this.#current.delete(n)
  }

  async #fresh(seconds: number): Promise<Lease> {
    const sentAt = systemClock.now()
    const g = await this.#grant(seconds)
    const lease = { id: g.id, guaranteedEnd: sentAt + g.ttl * 1000 }
    this.#current.set(seconds, lease)
    this.#known.set(lease.id, lease.guaranteedEnd)
    this.#prune(sentAt)
    return lease
  }

  #prune(now: number): void {
    for (const [id, end] of this.#known) if (end < now) this.#known.delete(id)
  }
}
