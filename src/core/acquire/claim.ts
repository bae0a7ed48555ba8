/**
 * A claim is what one acquire wants, and how to take it in one commit: the
 * part of an acquire that knows the layout of what it takes. The acquire
 * machine (machine.ts) decides *when* to try and what to wait for;
 * a claim decides *what* a try writes and what stands in its way.
 *
 * A claim is made of parts, one per key it takes (a lock, a lease, one key
 * of a multi-key lock, a semaphore's permit). A try puts every part's checks
 * and ops in one commit, so several keys are taken all at once or not at
 * all: no partial holds, so waiting for several keys cannot deadlock. A part
 * may see from a failed commit that it can try again at once (a shared
 * group it may join, a group that drained): the claim then plans again, a
 * few rounds at most, before it reports what blocks it.
 *
 * @module
 */
import type { Check, CommitOptions, Entry, Gate, Op, Value, WatchEvent } from '../contract/adapter'
import type { Context } from '../context'
import type { HoldInit } from '../hold/hold'
import { watches as at, type Sight, type Watched } from './wait'

/** How a try is made. */
export interface TryHow {
  /** Our place in the line: the same commit deletes it, and fails if it is gone. */
  place?: Entry
  /** Nobody stands ahead of us in line: an exclusive part may then keep shared holds out (its intent). */
  first?: boolean
  /**
   * Take the claim over what `sight` shows: `steal` over every blocker
   * (their tokens die), or over the blockers of one owner whose client is
   * known to be gone. Only over the very entries seen (same revision).
   */
  over?: { sight: Sight; owner?: string }
  /**
   * Send the try as a commit that waits at the store up to this many ms for
   * a change at one of its checked keys (capability `commitOnChange`), and
   * answers with its try then. Only the first round of a try waits.
   */
  waitChange?: number
  /** With `waitChange`: wait for the try to go through (`keepParked`; see {@link Claim.keepParked}). */
  keepParked?: boolean
  /** Commit with the adapter's own `commit`, not through the claim's gate (a plain try that takes a free key while another client holds the gate). */
  ungated?: boolean
}

/** What one try came to: the hold, or what stands in the way (`undefined`: nothing now — try again). */
export type TryResult<H> = { hold: H } | { sight: Sight | undefined; lostPlace: boolean }

/** What an acquire wants; see the module doc. */
export interface Claim<H> {
  /** The key whose wait line the claim's waiters stand in; `undefined` for none. */
  readonly lineKey: string | undefined
  /** The gate every try commits through (capability `gates`), once the acquire asked for one. */
  through?: Gate
  /** What a waiter's place in line says it wants (for `locks.query()`). */
  readonly lineValue?: Value
  /**
   * Whether a take that waits at the store may wait for success
   * (`keepParked`): every part's failed checks mean only "not yet" (an
   * exclusive key taken), never "try something else now" (a shared group
   * made, which a shared take must join instead).
   */
  readonly keepParked?: boolean
  /** With `keepParked`: the owner whose entry at a checked key answers a parked take (`CommitOptions.wakeOwner`). */
  readonly wakeOwner?: string
  /** One try (one commit, or a few when what it sees lets it try again at once). */
  attempt(sight: Sight | undefined, how: TryHow): Promise<TryResult<H>>
  /** Reads what stands in the way now (`undefined`: nothing). */
  look(): Promise<Sight | undefined>
  /** What an event at a watched place says: what is in the way now, or `undefined` (try). */
  afterEvent(sight: Sight, event: WatchEvent): Sight | undefined
  /**
   * How long a try may wait at the store for `sight` to change (see
   * {@link TryHow.waitChange}), in ms; 0 when it may not: some blocker is
   * not at a key every try checks (a change there would not wake it).
   */
  parkable?(sight: Sight): number
  /** We stand first in line and something blocks us (an exclusive part then keeps new shared holds out). */
  becameFirst?(): Promise<void>
  /** Lets go of anything the claim wrote while waiting (never the hold it won). */
  leave(): void
}

/** A part's checks and ops in one try. */
export interface Plan {
  checks: Check[]
  ops: Op[]
  /**
   * Other ways the part may go through, sent as `CommitOptions.orElse` with
   * a take that waits at the store for success (capability `orElse`; a
   * claim of one part): a semaphore's take of any free slot.
   */
  orElse?: Array<{ checks: Check[]; ops: Op[] }>
}

/** One key of a claim; see the module doc. */
export interface Part<P> {
  /** Whether an event at `key` is this part's. */
  owns(key: string): boolean
  /** This part's checks and ops for the next try, or what blocks it (then no commit is sent). */
  plan(how: TryHow): Plan | Sight | Promise<Plan | Sight>
  /** What a failed commit says of this part: what blocks it now, or `undefined` (plan again). */
  learn(failed: ReadonlyMap<string, Entry | undefined>, how: TryHow): Promise<Sight | undefined>
  /** This part's hold, from the entries the winning commit wrote. */
  won(written: ReadonlyMap<string, Entry>, sentAt: number): P
  /** What blocks this part, as last seen (`undefined`: nothing). */
  blocked(): Sight | undefined
  /** Reads what blocks this part now. */
  look(): Promise<Sight | undefined>
  /** What an event at one of its keys says: what blocks it now. */
  afterEvent(event: WatchEvent): Sight | undefined
  /** Whether every try of this part checks `key`, so a change there wakes a waiting try. */
  checks?(key: string): boolean
  /** The longest a try of this part may wait at the store, in ms (a part that has no such bound never waits). */
  parkLimit?(): number
  /** See {@link Claim.keepParked} (default false). */
  readonly keepParked?: boolean
  /** See {@link Claim.wakeOwner}. */
  readonly wakeOwner?: string
  /** See {@link Claim.becameFirst}. */
  becameFirst?(): Promise<void>
  /** Lets go of what the part wrote while waiting. */
  leave(): void
}

/** How many times a try plans again at once before it reports what blocks it. */
const ROUNDS = 4

/** The claim of `parts`, taken in one commit; `combine` makes the hold of the whole from the parts' holds. */
export function claimOf<P, H>(ctx: Context, parts: Array<Part<P>>, line: { key: string; value: Value } | undefined, combine: (holds: P[]) => H): Claim<H> {
  const blocked = () => mergeSights(parts.map((p) => p.blocked()))
  const wakeOwner = parts.find((p) => p.wakeOwner !== undefined)?.wakeOwner
  const claim: Claim<H> = {
    lineKey: line?.key,
    lineValue: line?.value,
    keepParked: parts.every((p) => p.keepParked === true),
    wakeOwner,
    async attempt(_sight, how) {
      for (let round = 1; ; round++) {
        const planned = parts.map((p) => p.plan(how))
        // A part that plans without reading (an exclusive key) answers at once: no promise to wait for.
        const plans = planned.some((p) => p instanceof Promise) ? await Promise.all(planned) : (planned as Array<Plan | Sight>)
        if (plans.some((p) => !('checks' in p))) return { sight: blocked(), lostPlace: false }
        // Loops, not flatMap: this is every acquire's path, and most claims have one part.
        const checks: Check[] = []
        const ops: Op[] = []
        for (const p of plans as Plan[]) {
          for (const c of p.checks) checks.push(c)
          for (const o of p.ops) ops.push(o)
        }
        if (how.place) {
          checks.push({ key: how.place.key, created: how.place.created })
          ops.push({ type: 'delete', key: how.place.key })
        }
        // A try that waits at the store counts its hold's TTL from here, before the wait: conservative.
        const sentAt = ctx.clock.now()
        const gate = how.ungated ? undefined : claim.through
        let options: CommitOptions | undefined
        // A parked take keeps its place's turn at the store, however often it parks again.
        if (how.waitChange) options = { waitChange: how.waitChange, keepParked: how.keepParked, parkOrder: how.place?.created, wakeOwner: how.keepParked ? wakeOwner : undefined }
        const orElse = plans.length === 1 && how.keepParked ? (plans[0] as Plan).orElse : undefined
        if (options && orElse) options.orElse = orElse.map((alt) => withPlace(alt, how.place))
        if (gate) options = { ...options, gate }
        const r = await ctx.adapter.commit(checks, ops, options)
        if (r.ok) {
          const written = new Map<string, Entry>()
          for (const e of r.entries) written.set(e.key, e)
          return { hold: combine(parts.map((p) => p.won(written, sentAt))) }
        }
        // A waiting take answered with no check failed: a waiter ahead in line kept its turn at the store (its
        // next park was on its way): the way is as we saw it. Park again, never a plain try past the line.
        if (r.failed.length === 0 && how.waitChange) {
          const sight = blocked()
          if (sight) return { sight, lostPlace: false }
        }
        const failed = new Map(r.failed.map((f) => [f.key, f.entry]))
        const lostPlace = how.place !== undefined && failed.has(how.place.key)
        const sights = await Promise.all(parts.map((p) => p.learn(failed, how)))
        if (lostPlace || round === ROUNDS || sights.some((s) => s !== undefined)) return { sight: blocked(), lostPlace }
        // Nothing blocks any part any more (it vanished, or a group may be joined): plan again.
        // A steal or takeover is over the very entries seen, and they changed: the next round is a plain try
        // (kept, it would check their old revisions again and fail every round: bench/FINDINGS.md §18).
        if (how.over || how.waitChange) how = { ...how, over: undefined, waitChange: undefined, keepParked: undefined }
      }
    },
    parkable(sight) {
      for (const w of sight.watches) if (w.prefix || !parts.some((p) => p.checks?.(w.key))) return 0
      let ms = Infinity
      for (const p of parts) ms = Math.min(ms, p.parkLimit?.() ?? 0)
      return ms
    },
    async look() {
      await Promise.all(parts.map((p) => p.look()))
      return blocked()
    },
    afterEvent(_sight, ev) {
      for (const p of parts) if (p.owns(ev.key)) p.afterEvent(ev)
      return blocked()
    },
    async becameFirst() {
      await Promise.all(parts.map((p) => p.becameFirst?.()))
    },
    leave() {
      for (const p of parts) p.leave()
    },
  }
  return claim
}

/** Another way of a try, checking and deleting our place in line as the try itself does. */
function withPlace(alt: { checks: Check[]; ops: Op[] }, place: Entry | undefined): { checks: Check[]; ops: Op[] } {
  if (!place) return alt
  return { checks: [...alt.checks, { key: place.key, created: place.created }], ops: [...alt.ops, { type: 'delete', key: place.key }] }
}

/** The sights of several parts as one (`undefined` when none blocks). */
export function mergeSights(sights: Array<Sight | undefined>): Sight | undefined {
  const some = sights.filter((s): s is Sight => s !== undefined)
  if (some.length <= 1) return some[0]
  return { blockers: some.flatMap((s) => s.blockers), watches: some.flatMap((s) => s.watches) }
}

/** A sight after an event at one of its watched places: that place is now seen up to the event. */
export function movedOn(watches: readonly Watched[], ev: WatchEvent): Watched[] {
  return watches.map((w) => (at(w, ev.key) && ev.revision > w.from ? { ...w, from: ev.revision } : w))
}

/** What a part needs to make its hold. */
export interface HoldSpec<V extends Value, P> {
  value: V
  ttl: number
  autoRenew: boolean
  make: (init: HoldInit<V>) => P
}
