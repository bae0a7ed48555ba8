/**
 * One permit of a semaphore: a *slot*. A semaphore on `key` with limit `n`
 * has slots 0 … n−1, each an entry of its own (U+0001 `p` + key + U+0001 +
 * the slot's number), held exactly as a lock is: taken by
 * `commit([{ slot, revision: null }], [set])`, renewed, released, expired
 * with its TTL. A try takes the lowest slot below its limit that it does not
 * know to be taken; so at most `limit` permits live, by the store's own
 * compare-and-set on each slot, with no count to drift when a holder
 * crashes. A permit's value records the limit it was taken with.
 *
 * Where the store keeps a parked take with other ways (capabilities
 * `keepParked` and `orElse`: memory, Redis, a node over either) and the
 * limit is at most `MAX_OR_ELSE`, a waiter parks one take that may fill
 * any slot: its planned slot, or else each other slot, in
 * order (`CommitOptions.orElse`). The store tries it in the step of every
 * change at a slot, in line order: a released permit goes to the first
 * waiter in line in the release's own step, and a waiter costs no list
 * and no watch. Each way checks its slot absent, so still at most `limit`.
 *
 * @module
 */
import type { Entry, WatchEvent } from '../contract/adapter'
import type { HoldSpec, Part, Plan, TryHow } from './claim'
import type { Context } from '../context'
import { MAX_OR_ELSE } from '../contract/limits'
import { listAll } from '../contract/pages'
import { slotOf, slotPrefix } from '../contract/reserved'
import { entryOf, watches, type Sight } from './wait'

/** The share of its TTL a try may wait at the store (a permit won then counts the wait against its TTL). */
const PARK_SHARE = 0.25

export class PermitPart<P> implements Part<P> {
  readonly #ctx: Context
  readonly #key: string
  readonly #limit: number
  readonly #spec: HoldSpec<null, P>
  readonly #prefix: string
  /** The live slots below the limit, as last seen; `undefined` until read. */
  #taken: Map<number, Entry> | undefined
  /** The first try goes without a read, to slot 0 (most semaphores are not full); if it fails, every slot is read. */
  #guessing: boolean | undefined
  /** The slot the last plan took (set by every plan before anything reads it). */
  #slot = 0
  #from = 0

  constructor(ctx: Context, key: string, limit: number, spec: HoldSpec<null, P>) {
    this.#ctx = ctx
    this.#key = key
    this.#limit = limit
    this.#spec = spec
    this.#prefix = slotPrefix(key)
  }

  /**
   * A parked take may fill any slot (see the module doc). Asked each time:
   * a node that refuses other ways takes the capability back mid-wait.
   */
  get #handsOver(): boolean {
    const caps = this.#ctx.adapter.capabilities
    return caps?.keepParked === true && caps.orElse === true && this.#limit <= MAX_OR_ELSE
  }

  /** A parked take waits for success: with its other ways, a failure only ever means "no slot free yet". */
  get keepParked(): boolean {
    return this.#handsOver
  }

  /** Every parked take checks each slot below the limit (its other ways do). */
  checks(key: string): boolean {
    if (!this.#handsOver) return false
    const slot = slotOf(this.#prefix, key)
    return slot !== undefined && slot < this.#limit
  }

  parkLimit(): number {
    // As a lock's: a permit counts its TTL from before a waiting try was sent.
    return this.#handsOver ? this.#spec.ttl * PARK_SHARE : 0
  }

  owns(key: string): boolean {
    return slotOf(this.#prefix, key) !== undefined
  }

  async plan(how: TryHow): Promise<Plan | Sight> {
    if (!this.#taken) {
      this.#taken = new Map()
      this.#guessing = true
    }
    const dead = how.over?.owner
    const gone = dead === undefined ? undefined : how.over!.sight.blockers.find((b) => b.owner === dead && this.owns(b.key))
    const set = (key: string) => ({ type: 'set' as const, key, value: { limit: this.#limit }, ttl: this.#spec.ttl, owner: this.#ctx.id })
    if (gone) {
      // A dead client's permit: take its slot over (a new life: its token dies).
      this.#slot = slotOf(this.#prefix, gone.key)!
      return { checks: [{ key: gone.key, revision: gone.revision }], ops: [{ ...set(gone.key), fresh: true }] }
    }
    this.#slot = this.#free()
    const parks = this.#handsOver && how.waitChange !== undefined && how.keepParked === true
    if (this.#slot < 0) {
      if (!parks) return this.blocked()!
      // Every slot is taken as far as we know: park on the first, with the others as other ways.
      this.#slot = 0
    }
    const key = this.#prefix + this.#slot
    const plan: Plan = { checks: [{ key, revision: null }], ops: [set(key)] }
    if (parks) {
      plan.orElse = []
      for (let i = 0; i < this.#limit; i++) {
        const other = this.#prefix + i
        if (i !== this.#slot) plan.orElse.push({ checks: [{ key: other, revision: null }], ops: [set(other)] })
      }
    }
    return plan
  }

  async learn(failed: ReadonlyMap<string, Entry | undefined>, how: TryHow): Promise<Sight | undefined> {
    const key = this.#prefix + this.#slot
    if (!failed.has(key)) return this.blocked()
    // A guess that failed, or a parked take answered with its own slot only: read them all (one read, not a try per slot).
    if (this.#guessing || (this.#handsOver && how.waitChange !== undefined)) return this.look()
    const entry = failed.get(key)
    if (entry) this.#see(entry)
    else this.#taken!.delete(this.#slot)
    return this.blocked()
  }

  won(written: ReadonlyMap<string, Entry>, sentAt: number): P {
    // A parked take may have gone through another way: its slot is the one written.
    for (const k of written.keys()) {
      const slot = slotOf(this.#prefix, k)
      if (slot !== undefined) this.#slot = slot
    }
    const key = this.#prefix + this.#slot
    const entry = written.get(key)!
    const { ttl, autoRenew } = this.#spec
    return this.#spec.make({ key: this.#key, value: null, token: entry.created, revision: entry.revision, ttl, sentAt, autoRenew, life: { entryKey: key } })
  }

  blocked(): Sight | undefined {
    if (!this.#taken || this.#free() >= 0) return undefined
    if (!this.#handsOver) return { blockers: [...this.#taken.values()], watches: [{ key: this.#prefix, prefix: true, from: this.#from }] }
    // Each slot watched at its own key: a take parked on them all is woken by a change at any (claim.ts's parkable).
    const watches = []
    for (let i = 0; i < this.#limit; i++) watches.push({ key: this.#prefix + i, prefix: false, from: this.#from })
    return { blockers: [...this.#taken.values()], watches }
  }

  async look(): Promise<Sight | undefined> {
    const listed = await listAll(this.#ctx.adapter, this.#prefix)
    this.#guessing = false
    this.#taken = new Map()
    for (const e of listed) this.#see(e)
    return this.blocked()
  }

  afterEvent(ev: WatchEvent): Sight | undefined {
    if (!this.#taken || !watches({ key: this.#prefix, prefix: true, from: 0 }, ev.key)) return this.blocked()
    this.#from = Math.max(this.#from, ev.revision)
    const slot = slotOf(this.#prefix, ev.key)
    if (slot !== undefined) {
      if (ev.type === 'put') this.#see(entryOf(ev))
      else this.#taken.delete(slot)
    }
    return this.blocked()
  }

  leave(): void {}

  #see(entry: Entry): void {
    const slot = slotOf(this.#prefix, entry.key)
    this.#from = Math.max(this.#from, entry.revision)
    if (slot !== undefined && slot < this.#limit) this.#taken!.set(slot, entry)
  }

  /** The lowest slot below the limit not known to be taken, or -1. */
  #free(): number {
    for (let i = 0; i < this.#limit; i++) if (!this.#taken!.has(i)) return i
    return -1
  }
}
