/**
 * One key held in shared mode (shared-group.ts has the layout): one commit
 * that writes this hold's share entry and joins the group at the lock key —
 * `add` +1 when a group is there (checked on its life), or a new group at 1
 * when the key is free — and checks that no exclusive waiter's intent is
 * there. What blocks it: an exclusive holder at the key, or an intent.
 *
 * @module
 */
import type { Check, Entry, Op, WatchEvent } from '../contract/adapter'
import { mergeSights, type HoldSpec, type Part, type Plan, type TryHow } from './claim'
import type { Context } from '../context'
import { INTENT_PREFIX, SHARED_OWNER } from '../contract/reserved'
import { isGroup, sharePrefix } from './shared-group'
import { entryOf, sightOf, type Sight } from './wait'

/** The share of its TTL a try may wait at the store (a hold won then counts the wait against its TTL). */
const PARK_SHARE = 0.25

let shares = 0

export class SharedPart<P> implements Part<P> {
  /** A parked take waits for success, and comes back when a group it may join instead was started. */
  readonly keepParked = true
  readonly wakeOwner = SHARED_OWNER
  readonly #ctx: Context
  readonly #key: string
  readonly #spec: HoldSpec<null, P>
  readonly #shareKey: string
  readonly #intentKey: string
  /** A group seen at the key, which this hold may join. */
  #group: Entry | undefined
  /** An exclusive holder (or any entry that is not a group) seen at the key. */
  #holder: Entry | undefined
  /** An exclusive waiter's intent seen. */
  #intent: Entry | undefined

  constructor(ctx: Context, key: string, spec: HoldSpec<null, P>) {
    this.#ctx = ctx
    this.#key = key
    this.#spec = spec
    this.#shareKey = `${sharePrefix(key)}${ctx.id}.${(++shares).toString(36)}`
    this.#intentKey = INTENT_PREFIX + key
  }

  /** The longest share key this client's shared holds of `key` can need. */
  static keyLength(ctx: Context, key: string): number {
    return sharePrefix(key).length + ctx.id.length + 12
  }

  owns(key: string): boolean {
    return key === this.#key || key === this.#intentKey
  }

  /** Every try checks the lock key and the intent: a change at either wakes a parked one. */
  checks(key: string): boolean {
    return key === this.#key || key === this.#intentKey
  }

  parkLimit(): number {
    // As an exclusive take's: the hold counts its TTL from before the wait.
    return this.#spec.ttl * PARK_SHARE
  }

  async plan(how: TryHow): Promise<Plan> {
    const dead = how.over?.owner
    const checks: Check[] = []
    const ops: Op[] = []
    const newGroup: Op = { type: 'set', key: this.#key, value: 1, owner: SHARED_OWNER }
    const holder = dead === undefined ? undefined : how.over!.sight.blockers.find((b) => b.key === this.#key && b.owner === dead)
    if (holder) {
      // The exclusive holder's client is gone: a new group over its entry (a new life: its token dies).
      checks.push({ key: this.#key, revision: holder.revision })
      ops.push(newGroup)
    } else if (this.#group) {
      checks.push({ key: this.#key, created: this.#group.created })
      ops.push({ type: 'add', key: this.#key, delta: 1 })
    } else {
      checks.push({ key: this.#key, revision: null })
      ops.push(newGroup)
    }
    const intent = dead === undefined ? undefined : how.over!.sight.blockers.find((b) => b.key === this.#intentKey && b.owner === dead)
    if (intent) {
      checks.push({ key: this.#intentKey, revision: intent.revision })
      ops.push({ type: 'delete', key: this.#intentKey })
    } else {
      checks.push({ key: this.#intentKey, revision: null })
    }
    ops.push({ type: 'set', key: this.#shareKey, value: null, ttl: this.#spec.ttl, owner: this.#ctx.id })
    return { checks, ops }
  }

  async learn(failed: ReadonlyMap<string, Entry | undefined>): Promise<Sight | undefined> {
    if (failed.has(this.#key)) this.#seeKey(failed.get(this.#key))
    if (failed.has(this.#intentKey)) this.#intent = failed.get(this.#intentKey)
    return this.blocked()
  }

  won(written: ReadonlyMap<string, Entry>, sentAt: number): P {
    const share = written.get(this.#shareKey)!
    const group = written.get(this.#key)!
    const key = this.#key
    const ctx = this.#ctx
    const { ttl, autoRenew } = this.#spec
    return this.#spec.make({
      key,
      value: null,
      token: share.created,
      revision: share.revision,
      ttl,
      sentAt,
      autoRenew,
      mode: 'shared',
      life: {
        entryKey: this.#shareKey,
        group: { key, created: group.created },
        releaseOps: [{ type: 'add', key, delta: -1 }],
        async afterRelease(entries) {
          // The last one out ends the group; by its revision, so that a holder joining meanwhile keeps it.
          const g = entries.find((e) => e.key === key)
          if (g && typeof g.value === 'number' && g.value <= 0) await ctx.adapter.commit([{ key, revision: g.revision }], [{ type: 'delete', key }]).catch(() => {})
        },
      },
    })
  }

  blocked(): Sight | undefined {
    return mergeSights([this.#holder && sightOf(this.#holder), this.#intent && sightOf(this.#intent)])
  }

  async look(): Promise<Sight | undefined> {
    const [atKey, intent] = await Promise.all([this.#ctx.adapter.get(this.#key), this.#ctx.adapter.get(this.#intentKey)])
    this.#seeKey(atKey)
    this.#intent = intent
    return this.blocked()
  }

  afterEvent(ev: WatchEvent): Sight | undefined {
    const entry = ev.type === 'put' ? entryOf(ev) : undefined
    if (ev.key === this.#key) this.#seeKey(entry)
    else if (ev.key === this.#intentKey) this.#intent = entry
    return this.blocked()
  }

  leave(): void {}

  #seeKey(entry: Entry | undefined): void {
    this.#group = isGroup(entry) ? entry : undefined
    this.#holder = isGroup(entry) ? undefined : entry
  }
}
