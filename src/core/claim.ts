/**
 * A claim is what one acquire wants, and how to take it in one commit: the
 * part of an acquire that knows the layout of what it takes. The acquire
 * machine (acquire-machine.ts) decides *when* to try and what to wait for;
 * a claim decides *what* a try writes and what stands in its way.
 *
 * This module has the claim of one key held alone (a lock, a lease, an
 * election's term): `commit([{ key, revision: null }], [set])`.
 *
 * @module
 */
import type { Check, Entry, Op, Value, WatchEvent } from './adapter'
import type { Context } from './context'
import type { HoldInit } from './hold'
import { entryOf, sightOf, type Sight } from './wait-change'

/** How a try is made. */
export interface TryHow {
  /** Our place in the line: the same commit deletes it, and fails if it is gone. */
  place?: Entry
  /**
   * Take the claim over what the sight shows: `steal` over every blocker
   * (their tokens die), or over the blockers of one owner whose client is
   * known to be gone. Only over the very entries seen (same revision).
   */
  over?: 'steal' | { owner: string }
}

/** What one try came to: the hold, or what stands in the way (`undefined`: nothing now — try again). */
export type TryResult<H> = { hold: H } | { sight: Sight | undefined; lostPlace: boolean }

/** What an acquire wants; see the module doc. */
export interface Claim<H> {
  /** The key whose wait line the claim's waiters stand in; `undefined` for none. */
  readonly lineKey: string | undefined
  /** One try (one commit, or a few when what it sees lets it try again at once). */
  attempt(sight: Sight | undefined, how: TryHow): Promise<TryResult<H>>
  /** Reads what stands in the way now (`undefined`: nothing). */
  look(): Promise<Sight | undefined>
  /** What an event at a watched place says: what is in the way now, or `undefined` (try, or look). */
  afterEvent(sight: Sight, event: WatchEvent): Sight | undefined
  /** Lets go of anything the claim wrote while waiting (never the hold it won). */
  leave(): void
}

/** What a claim needs to make its hold. */
export interface HoldSpec<V extends Value, H> {
  value: V
  ttl: number
  autoRenew: boolean
  make: (init: HoldInit<V>) => H
}

/** The claim of `key` held alone: a lock, a lease, an election's term. */
export function soleClaim<V extends Value, H>(ctx: Context, key: string, spec: HoldSpec<V, H>): Claim<H> {
  const set = { type: 'set' as const, key, value: spec.value, ttl: spec.ttl, owner: ctx.id }
  return {
    lineKey: key,
    async attempt(sight, how) {
      const current = sight?.blockers[0]
      const sentAt = ctx.clock.now()
      const checks: Check[] = [current ? { key, revision: current.revision } : { key, revision: null }]
      const ops: Op[] = [how.over ? { ...set, fresh: true } : set]
      if (how.place) {
        checks.push({ key: how.place.key, created: how.place.created })
        ops.push({ type: 'delete', key: how.place.key })
      }
      const r = await ctx.adapter.commit(checks, ops)
      if (r.ok) {
        const entry = r.entries[0]!
        return { hold: spec.make({ key, value: spec.value, token: entry.created, revision: entry.revision, ttl: spec.ttl, sentAt, autoRenew: spec.autoRenew }) }
      }
      const now = r.failed.find((f) => f.key === key)?.entry
      return { sight: now && sightOf(now), lostPlace: r.failed.some((f) => f.key !== key) }
    },
    async look() {
      const current = await ctx.adapter.get(key)
      return current && sightOf(current)
    },
    // A put is a renewal or a new holder: wait on it; a delete or expiry frees the key.
    afterEvent: (_sight, ev) => (ev.type === 'put' ? sightOf(entryOf(ev)) : undefined),
    leave() {},
  }
}
