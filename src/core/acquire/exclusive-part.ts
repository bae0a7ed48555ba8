/**
 * One key held alone — a lock in exclusive mode, a lease, an election's
 * term — taken by `commit([{ key, revision: null }], [set])`: it succeeds
 * only if no live entry holds the key.
 *
 * For a lock, the key may hold a shared group instead (shared-group.ts). The
 * part then lists the group's shares: none live, and it takes the key over
 * the group in a commit checked on the group's revision; some live, and it
 * waits for them. Standing first in line, it also writes its *intent*
 * (U+0001 `x` + key, renewed while it waits), which every shared acquire
 * checks absent: new shared holds stay out while the ones there drain, so a
 * stream of them cannot starve it. The intent is liveness only; the group's
 * revision decides safety.
 *
 * @module
 */
import type { Check, Entry, Op, Value, WatchEvent } from '../contract/adapter'
import { movedOn, type HoldSpec, type Part, type Plan, type TryHow } from './claim'
import type { Context } from '../context'
import { KeptEntry } from './kept-entry'
import { INTENT_PREFIX } from '../contract/reserved'
import { groupSight, isGroup, isShareOf, liveShares } from './shared-group'
import { MAX_KEY_LENGTH } from '../contract/validate'
import { entryOf, sightOf, type Sight } from './wait'
import { QUEUE_TTL } from './line'

/** The share of its TTL a try may wait at the store (a hold won then counts the wait against its TTL). */
const PARK_SHARE = 0.25

export interface ExclusiveOptions {
  /** The key is a lock's, which may be held in shared mode (leases and terms never are). */
  lock: boolean
}

export class ExclusivePart<V extends Value, P> implements Part<P> {
  /** A parked take of a key held alone waits for it to go through: a failure only ever means "not yet". */
  readonly keepParked = true
  readonly #ctx: Context
  readonly #key: string
  readonly #spec: HoldSpec<V, P>
  readonly #lock: boolean
  /** What was last seen at the key (`undefined`: expect it free). */
  #seen: Entry | undefined
  /** `#seen` is a group with no live share: take the key over it. */
  #drained = false
  #shares: Entry[] = []
  #blocked: Sight | undefined
  #intent: KeptEntry | undefined

  constructor(ctx: Context, key: string, spec: HoldSpec<V, P>, options: ExclusiveOptions) {
    this.#ctx = ctx
    this.#key = key
    this.#spec = spec
    this.#lock = options.lock
  }

  owns(key: string): boolean {
    return key === this.#key || (this.#lock && isShareOf(this.#key, key))
  }

  plan(how: TryHow): Plan {
    let expect = this.#drained ? this.#seen : undefined
    let fresh = false
    const set: Op = { type: 'set', key: this.#key, value: this.#spec.value, ttl: this.#spec.ttl, owner: this.#ctx.id }
    // The key's own check and set come first, the dead shares' after (no unshift: this is every acquire's path).
    const checks: Check[] = [{ key: this.#key, revision: null }]
    const ops: Op[] = [set]
    if (how.over) {
      const { sight, owner } = how.over
      const atKey = sight.blockers.find((b) => b.key === this.#key)
      const dead = owner === undefined ? [] : sight.blockers.filter((b) => b.owner === owner)
      if (owner === undefined || (atKey && atKey.owner === owner)) {
        // A steal over whatever holds the key, or a takeover of a dead holder's entry.
        expect = atKey ?? this.#seen
        fresh = true
      } else if (isGroup(this.#seen) && dead.length > 0 && dead.length === sight.blockers.length) {
        // Every live share is a dead client's: end them in the same commit.
        expect = this.#seen
        for (const s of dead) {
          checks.push({ key: s.key, revision: s.revision })
          ops.push({ type: 'delete', key: s.key })
        }
      }
    }
    if (expect) checks[0] = { key: this.#key, revision: expect.revision }
    if (fresh) ops[0] = { ...set, fresh }
    return { checks, ops }
  }

  checks(key: string): boolean {
    return key === this.#key
  }

  parkLimit(): number {
    // A hold counts its TTL from before a waiting try was sent: never let it be born with less than most of it.
    return this.#spec.ttl * PARK_SHARE
  }

  async learn(failed: ReadonlyMap<string, Entry | undefined>, how: TryHow): Promise<Sight | undefined> {
    // Our key's check held (another part's, or the place, failed): what we knew stays.
    if (!failed.has(this.#key)) return (this.#blocked = undefined)
    return this.#see(failed.get(this.#key), how.first === true)
  }

  won(written: ReadonlyMap<string, Entry>, sentAt: number): P {
    const entry = written.get(this.#key)!
    const { value, ttl, autoRenew } = this.#spec
    return this.#spec.make({ key: this.#key, value, token: entry.created, revision: entry.revision, ttl, sentAt, autoRenew })
  }

  blocked(): Sight | undefined {
    return this.#blocked
  }

  async look(): Promise<Sight | undefined> {
    return this.#see(await this.#ctx.adapter.get(this.#key), false)
  }

  afterEvent(ev: WatchEvent): Sight | undefined {
    const blocked = this.#blocked
    if (!blocked) return undefined
    if (ev.key === this.#key) {
      if (ev.type !== 'put') return this.#free()
      const entry = entryOf(ev)
      // A group's count moved: the shares seen still block us (their own events say when they go).
      if (isGroup(entry) && this.#shares.length > 0 && isGroup(this.#seen) && entry.created === this.#seen!.created) {
        this.#seen = entry
        return (this.#blocked = { blockers: this.#shares, watches: movedOn(blocked.watches, ev) })
      }
      // A new group (try, and learn its shares), or a holder's renewal or a new holder (wait on it).
      if (isGroup(entry)) return this.#free()
      this.#seen = entry
      this.#shares = []
      return (this.#blocked = sightOf(entry))
    }
    if (!isShareOf(this.#key, ev.key) || !isGroup(this.#seen)) return blocked
    const rest = this.#shares.filter((s) => s.key !== ev.key)
    if (ev.type === 'put' && (ev.created ?? ev.revision) >= this.#seen!.created) rest.push(entryOf(ev))
    this.#shares = rest
    if (rest.length === 0) return this.#free()
    return (this.#blocked = { blockers: rest, watches: movedOn(blocked.watches, ev) })
  }

  async becameFirst(): Promise<void> {
    if (this.#shares.length > 0) await this.#intend()
  }

  leave(): void {
    this.#intent?.leave()
    this.#intent = undefined
  }

  /** What blocks us, from the entry at the key; `first`: we stand first in line. */
  async #see(entry: Entry | undefined, first: boolean): Promise<Sight | undefined> {
    this.#seen = entry
    this.#drained = false
    this.#shares = []
    if (!entry) return (this.#blocked = undefined)
    if (!this.#lock || !isGroup(entry)) return (this.#blocked = sightOf(entry))
    const shares = await liveShares(this.#ctx, this.#key, entry)
    if (shares.length === 0) {
      this.#drained = true
      return (this.#blocked = undefined)
    }
    this.#shares = shares
    if (first) await this.#intend()
    return (this.#blocked = groupSight(this.#key, entry, shares))
  }

  #free(): undefined {
    this.#seen = undefined
    this.#drained = false
    this.#shares = []
    return (this.#blocked = undefined)
  }

  /** Writes our intent, unless we keep it already (or the key is too long to have one; then shared holds may keep coming). */
  async #intend(): Promise<void> {
    const key = INTENT_PREFIX + this.#key
    if (key.length > MAX_KEY_LENGTH || this.#intent?.entry) return
    this.#intent ??= new KeptEntry(this.#ctx, key, 'exclusive', QUEUE_TTL)
    // Another waiter's intent (one that thinks it is first, a multi-key waiter) keeps them out as well.
    await this.#intent.take().catch(() => {})
  }
}
