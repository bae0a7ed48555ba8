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
 * still try the lock when they find it free on a patrol (see machine.ts).
 *
 * @module
 */
import type { Entry, Value } from '../contract/adapter'
import type { Context } from '../context'
import { ConflictError } from '../contract/errors'
import { KeptEntry } from './kept-entry'
import { listAll, pagesOf } from '../contract/pages'
import { QUEUE_PREFIX, SEP } from '../contract/reserved'
import { MAX_KEY_LENGTH } from '../contract/validate'
import type { Sight } from './wait'

/** How long a waiter's place lives without renewal; renewed at a third of it. */
export const QUEUE_TTL = 10_000

/**
 * How long, in ms, a client remembers that it had to wait in line for a key:
 * its next acquire of that key within this time joins the line at once
 * (a parked take's first try is the try), instead of a plain try first that
 * would only find the key taken. A contended lock costs a request less per
 * acquire; a lock that stopped being contended, one write more once.
 */
export const CONTENDED_MS = 1_000
/** Most keys a client remembers so (the oldest is forgotten first). */
const CONTENDED_KEYS = 256
const contended = new WeakMap<Context, Map<string, { at: number; sight: Sight }>>()

let joins = 0

/** One waiter's place in the line of one lock key. */
export class WaitQueue {
  readonly #ctx: Context
  readonly #prefix: string
  readonly #value: Value
  #place: KeptEntry | undefined
  #left = false
  #joining: Promise<void> | undefined

  /**
   * The queue of `lockKey`, or `undefined` when the key is too long to have
   * one (its waiters then simply retry). `value` says what the waiter wants
   * (`exclusive`, `shared`, `permit`), for `locks.query()`.
   */
  static for(ctx: Context, lockKey: string, value: Value = null): WaitQueue | undefined {
    return WaitQueue.fits(ctx, lockKey) ? new WaitQueue(ctx, QUEUE_PREFIX + lockKey + SEP, value) : undefined
  }

  /** Remembers that this client waited in line for `lockKey`, blocked by `sight` (see {@link CONTENDED_MS}). */
  static waited(ctx: Context, lockKey: string, sight: Sight): void {
    let keys = contended.get(ctx)
    if (!keys) contended.set(ctx, (keys = new Map()))
    keys.delete(lockKey)
    keys.set(lockKey, { at: ctx.clock.now(), sight })
    if (keys.size > CONTENDED_KEYS) keys.delete(keys.keys().next().value!)
  }

  /** What last blocked this client at `lockKey`, if it waited in line for it within {@link CONTENDED_MS}. */
  static contended(ctx: Context, lockKey: string): Sight | undefined {
    const seen = contended.get(ctx)?.get(lockKey)
    return seen && ctx.clock.now() - seen.at <= CONTENDED_MS ? seen.sight : undefined
  }

  /** Whether `lockKey` is short enough to have a line (our place's key: prefix, client id, a counter). */
  static fits(ctx: Context, lockKey: string): boolean {
    return QUEUE_PREFIX.length + lockKey.length + SEP.length + ctx.id.length + 12 <= MAX_KEY_LENGTH
  }

  private constructor(ctx: Context, prefix: string, value: Value) {
    this.#ctx = ctx
    this.#prefix = prefix
    this.#value = value
  }

  /** Whether we stand in line or are joining it. */
  get placed(): boolean {
    return this.#place?.entry !== undefined || this.#joining !== undefined
  }

  /** Our entry while we stand in line (to be deleted in the same commit that takes the lock). */
  get entry(): Entry | undefined {
    return this.#place?.entry
  }

  /**
   * Joins the line if we are not in it, and returns the waiter just ahead of
   * us (`undefined` when we are first).
   */
  async ahead(): Promise<Entry | undefined> {
    for (let tries = 0; tries < 3; tries++) {
      await this.#enter()
      // Two calls may run at once (the machine leaves a raced one running): each forgets only the
      // place it looked for, never a newer one the other joined with meanwhile.
      const place = this.#place
      const own = place?.entry
      const line = own ? (await listAll(this.#ctx.adapter, this.#prefix)).filter((e) => !e.key.slice(this.#prefix.length).includes(SEP)) : []
      const mine = own && line.find((e) => e.key === own.key && e.created === own.created)
      if (mine) {
        let ahead: Entry | undefined
        for (const e of line) if (e.created < mine.created && (!ahead || e.created > ahead.created)) ahead = e
        return ahead
      }
      // Our place expired (renewals failed): join again at the back.
      if (this.#place === place) this.lost()
    }
    return undefined
  }

  /**
   * Joins the line if we are not in it, without asking who is ahead: our
   * place, for a take that checks it and waits at the store in the order it
   * came (capability `keepParked`). `undefined` when we left meanwhile.
   */
  async place(): Promise<Entry | undefined> {
    if (!this.#left) await this.#enter()
    return this.entry
  }

  /**
   * Whether anyone else stands in the line now: a line-respecting try (the
   * Web Locks API's grant order) does not go ahead of them.
   */
  async occupied(): Promise<boolean> {
    const own = this.entry?.key
    for await (const page of pagesOf(this.#ctx.adapter, this.#prefix)) {
      if (page.some((e) => e.key !== own && !e.key.slice(this.#prefix.length).includes(SEP))) return true
    }
    return false
  }

  /** Forget our place (the store says it is gone); the next {@link ahead} joins again. */
  lost(): void {
    this.#place?.lost()
    this.#place = undefined
  }

  /** Leaves the line whose place the commit that took the lock already deleted: nothing more is written. */
  taken(): void {
    this.#place?.lost()
    this.leave()
  }

  /** Removes a dead waiter's entry (its owner is gone), if it is still the one we saw. */
  async evict(dead: Entry): Promise<void> {
    await this.#ctx.adapter.commit([{ key: dead.key, created: dead.created }], [{ type: 'delete', key: dead.key }]).catch(() => {})
  }

  /** Leaves the line (best effort: an entry that cannot be deleted expires). */
  leave(): void {
    this.#left = true
    this.#place?.leave()
  }

  /** Joins the line unless we stand in it; one join at a time (a caller that raced ahead waits for the first). */
  async #enter(): Promise<void> {
    if (this.entry) return
    this.#joining ??= this.#join().finally(() => {
      this.#joining = undefined
    })
    await this.#joining
  }

  async #join(): Promise<void> {
    const key = `${this.#prefix}${this.#ctx.id}.${(++joins).toString(36)}`
    const place = new KeptEntry(this.#ctx, key, this.#value, QUEUE_TTL)
    // Set before the write, so that a leave() meanwhile deletes the place once written.
    this.#place = place
    if (this.#left) place.leave()
    const taken = await place.take()
    if (!taken.entry) throw new ConflictError(`the wait-queue key ${JSON.stringify(key)} already exists`)
  }
}
