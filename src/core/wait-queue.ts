/**
 * The line of waiters for one lock key, kept in the store itself so it works
 * across tabs and machines on any adapter (etcd's lock recipe, on our
 * compare-and-set): each waiter writes an entry under the key's queue prefix,
 * and the order of their `created` revisions is the order of the line. Only
 * the first in line tries the lock when it frees; the others watch the entry
 * just ahead of them, so a release wakes one waiter, not all.
 *
 * The line is advisory, never a safety mechanism: the lock's own
 * compare-and-set decides who holds it. A waiter that dies leaves an entry
 * that expires after {@link QUEUE_TTL}; until then the waiters behind it
 * still try the lock when they find it free on a patrol (see acquire.ts).
 *
 * @module
 */
import type { Entry } from './adapter'
import type { Context } from './context'
import { ConflictError } from './errors'
import { listAll } from './pages'
import { QUEUE_PREFIX } from './reserved'
import { MAX_KEY_LENGTH } from './validate'

const SEP = '\u0001'
/** How long a waiter's place lives without renewal; renewed at a third of it. */
export const QUEUE_TTL = 10_000

let joins = 0

/** One waiter's place in the line of one lock key. */
export class WaitQueue {
  readonly #ctx: Context
  readonly #prefix: string
  #entry: Entry | undefined
  #renewal: ReturnType<Context['clock']['setTimeout']> | undefined
  #left = false
  #joining: Promise<void> | undefined

  /** The queue of `lockKey`, or `undefined` when the key is too long to have one (its waiters then simply retry). */
  static for(ctx: Context, lockKey: string): WaitQueue | undefined {
    const prefix = QUEUE_PREFIX + lockKey + SEP
    // Our own suffix: the client id (a UUID) and a counter.
    if (prefix.length + ctx.id.length + 12 > MAX_KEY_LENGTH) return undefined
    return new WaitQueue(ctx, prefix)
  }

  private constructor(ctx: Context, prefix: string) {
    this.#ctx = ctx
    this.#prefix = prefix
  }

  /** Whether we stand in line or are joining it. */
  get placed(): boolean {
    return this.#entry !== undefined || this.#joining !== undefined
  }

  /** Our entry while we stand in line (to be deleted in the same commit that takes the lock). */
  get entry(): Entry | undefined {
    return this.#entry
  }

  /**
   * Joins the line if we are not in it, and returns the waiter just ahead of
   * us (`undefined` when we are first).
   */
  async ahead(): Promise<Entry | undefined> {
    for (let tries = 0; ; tries++) {
      if (!this.#entry) {
        // One join at a time: a caller that raced ahead asks again while the first is on its way.
        this.#joining ??= this.#join().finally(() => {
          this.#joining = undefined
        })
        await this.#joining
      }
      const line = (await listAll(this.#ctx.adapter, this.#prefix)).filter((e) => !e.key.slice(this.#prefix.length).includes(SEP))
      const mine = line.find((e) => e.key === this.#entry!.key && e.created === this.#entry!.created)
      if (!mine) {
        // Our place expired (renewals failed): join again at the back.
        this.#entry = undefined
        if (tries < 2) continue
        return undefined
      }
      let ahead: Entry | undefined
      for (const e of line) if (e.created < mine.created && (!ahead || e.created > ahead.created)) ahead = e
      return ahead
    }
  }

  /** Forget our place (the store says it is gone); the next {@link ahead} joins again. */
  lost(): void {
    this.#entry = undefined
  }

  /** Removes a dead waiter's entry (its owner is gone), if it is still the one we saw. */
  async evict(dead: Entry): Promise<void> {
    await this.#ctx.adapter.commit([{ key: dead.key, created: dead.created }], [{ type: 'delete', key: dead.key }]).catch(() => {})
  }

  /** Leaves the line (best effort: an entry that cannot be deleted expires). */
  leave(): void {
    this.#left = true
    if (this.#renewal !== undefined) this.#ctx.clock.clearTimeout(this.#renewal)
    const entry = this.#entry
    this.#entry = undefined
    if (entry) this.#ctx.adapter.commit([{ key: entry.key, created: entry.created }], [{ type: 'delete', key: entry.key }]).catch(() => {})
  }

  async #join(): Promise<void> {
    const key = `${this.#prefix}${this.#ctx.id}.${(++joins).toString(36)}`
    const r = await this.#ctx.adapter.commit([{ key, revision: null }], [{ type: 'set', key, value: null, ttl: QUEUE_TTL, owner: this.#ctx.id }])
    if (!r.ok) throw new ConflictError(`the wait-queue key ${JSON.stringify(key)} already exists`)
    this.#entry = r.entries[0]!
    if (this.#left) this.leave()
    else this.#scheduleRenewal()
  }

  #scheduleRenewal(): void {
    if (this.#renewal !== undefined) this.#ctx.clock.clearTimeout(this.#renewal)
    this.#renewal = this.#ctx.clock.setTimeout(() => {
      this.#renewal = undefined
      const entry = this.#entry
      if (!entry || this.#left) return
      this.#ctx.adapter
        .commit([{ key: entry.key, created: entry.created }], [{ type: 'set', key: entry.key, value: null, ttl: QUEUE_TTL, owner: this.#ctx.id }])
        .then(
          (r) => {
            if (this.#entry !== entry) return
            if (r.ok) this.#entry = r.entries[0]!
            else this.#entry = undefined
            if (!this.#left && this.#entry) this.#scheduleRenewal()
          },
          () => {
            if (!this.#left && this.#entry === entry) this.#scheduleRenewal()
          },
        )
    }, QUEUE_TTL / 3)
  }
}
