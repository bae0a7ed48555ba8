/**
 * `client.locks`: mutual exclusion with TTLs and fencing tokens — held alone
 * (`exclusive`) or beside other readers (`shared`, as the Web Locks API),
 * on one key or several at once, with `run` for a function that holds a
 * lock while it runs and `query` for who holds and who waits.
 *
 * A lock is a lease with no value. `acquire` never blocks unless asked to
 * (`wait`), and exclusive locks are not reentrant: a client that holds a
 * lock gets `null` when it asks for it again. Shared holds are independent
 * holds, so one client may hold several; a shared holder that asks for the
 * same lock exclusively waits for itself (as in the Web Locks API: release
 * first).
 *
 * Several keys are taken in one commit or not at all: no partial holds, so
 * waiting for several keys cannot deadlock, however the key sets overlap.
 * A multi-key waiter stands in no line (it watches all its keys and tries
 * when one frees), so single-key waiters in a line of one of its keys may go
 * before it.
 *
 * @module
 */
import { checkAcquire, checkKeys, checkMode, type AcquireOptions } from './acquire/checks'
import { isGroup } from './acquire/shared-group'
import type { Context } from './context'
import { InvalidArgumentError } from './contract/errors'
import { checkOptions, checkPrefix, checkUserKey } from './contract/validate'
import type { LockMode } from './hold/hold'
import type { Lock } from './hold/lock'
import type { LockSet } from './hold/lock-set'
import { runArgs, runHeld } from './hold/run'
import type { LockQuery } from './lock-query'
import { acquire } from './acquire'
import { holderOf, queryLocks } from './lock-query'

export { Hold } from './hold/hold'
export { Lock } from './hold/lock'
export type { Fence, LockMode } from './hold/hold'
export type { LockSet } from './hold/lock-set'
export { IN_LINE, type AcquireOptions } from './acquire/checks'

/** Options of {@link Locks.acquire}. */
export interface LockOptions extends AcquireOptions {
  /**
   * `exclusive` (default): the only holder. `shared`: one of any number of
   * shared holders, never beside an exclusive one (readers and a writer).
   * Waiters are served in line order, so a stream of shared holders does
   * not starve a waiting exclusive one. `steal` needs `exclusive`.
   */
  mode?: LockMode
}

/** Options of {@link Locks.run}: those of `acquire`; the lock always renews itself while the function runs. */
export type RunOptions = Omit<LockOptions, 'autoRenew'>

/** Who holds a lock, from {@link Locks.holder}. */
export interface Holder {
  /** The holding client's id. */
  owner: string
  /** The holder's fencing token. */
  token: number
  /** Milliseconds left on the store's clock, if the entry has a TTL. */
  ttl?: number
  /** How it is held; for a lock held in shared mode, this is its earliest shared holder. */
  mode: LockMode
}

/**
 * The lock API of a client.
 *
 * @example
 * const lock = await client.locks.acquire('lock:job', { ttl: 10_000, wait: 5_000 })
 */
export class Locks {
  readonly #ctx: Context

  /** @internal */
  constructor(ctx: Context) {
    this.#ctx = ctx
  }

  /**
   * Takes the lock `key` — or every lock of `keys`, in one commit — and
   * resolves the {@link Lock} (a {@link LockSet} for several keys), or
   * `null` when it is held elsewhere (after `wait` ms, if given). Rejects
   * with `signal.reason` on abort.
   *
   * @example
   * const lock = await client.locks.acquire('lock:nightly-report', { ttl: 30_000 })
   * if (!lock) console.log('Another instance holds the lock. Skipping.')
   * const reading = await client.locks.acquire('doc:1', { mode: 'shared', wait: 5_000 })
   * const both = await client.locks.acquire(['account:1', 'account:2'], { wait: 5_000 })
   */
  acquire(key: string, options?: LockOptions): Promise<Lock | null>
  acquire(keys: readonly string[], options?: LockOptions): Promise<LockSet | null>
  acquire(keyOrKeys: string | readonly string[], options?: LockOptions): Promise<Lock | LockSet | null>
  async acquire(keyOrKeys: string | readonly string[], rawOptions?: LockOptions): Promise<Lock | LockSet | null> {
    const ctx = this.#ctx
    const keys = Array.isArray(keyOrKeys) ? checkKeys(keyOrKeys) : [checkUserKey(keyOrKeys)]
    const options = checkOptions<LockOptions>(rawOptions)
    const mode = checkMode(options.mode)
    const o = checkAcquire(ctx, options)
    if (o.steal && mode === 'shared') throw new InvalidArgumentError("steal takes a lock from every holder: it needs mode 'exclusive'")
    if (o.steal && keys.length > 1) throw new InvalidArgumentError('steal takes one key at a time, not a list')
    if (Array.isArray(keyOrKeys)) return acquire(ctx, { kind: 'locks', keys, mode }, o)
    return acquire(ctx, { kind: 'lock', key: keys[0]!, mode }, o)
  }

  /**
   * Acquires the lock (as `acquire`, with the same options), calls `fn` with
   * it, renews it while `fn` runs and releases it when `fn` settles — also
   * when it throws — and resolves with what `fn` returns. When the lock is
   * not had within `wait`, `fn` is called with `null` (as the Web Locks API
   * does under `ifAvailable`). When the lock ends while `fn` runs, its
   * `signal` aborts, and once `fn` settles `run` rejects with that reason.
   *
   * @example
   * const report = await client.locks.run('lock:report', { wait: 10_000 }, async (lock) => {
   *   if (!lock) return 'skipped: another instance runs it'
   *   return buildReport(lock.signal)
   * })
   */
  run<T>(key: string, fn: (lock: Lock | null) => T | PromiseLike<T>): Promise<T>
  run<T>(key: string, options: RunOptions | undefined, fn: (lock: Lock | null) => T | PromiseLike<T>): Promise<T>
  run<T>(keys: readonly string[], options: RunOptions | undefined, fn: (locks: LockSet | null) => T | PromiseLike<T>): Promise<T>
  async run<T>(keyOrKeys: string | readonly string[], optionsOrFn: unknown, maybeFn?: unknown): Promise<T> {
    const [options, fn] = runArgs<RunOptions, (hold: never) => T | PromiseLike<T>>(optionsOrFn as RunOptions, maybeFn as undefined)
    if (typeof fn !== 'function') throw new InvalidArgumentError('run needs a function to call with the lock')
    const hold = await this.acquire(keyOrKeys, { ...checkOptions<RunOptions>(options), autoRenew: true })
    return runHeld(hold, fn as (hold: Lock | LockSet | null) => T | PromiseLike<T>)
  }

  /**
   * Who holds the lock `key` now, or `undefined` when nobody does. For a
   * lock held in shared mode, its earliest shared holder (`query` lists all).
   *
   * @example
   * const h = await client.locks.holder('lock:nightly-report') // { owner, token, ttl, mode }
   */
  async holder(key: string): Promise<Holder | undefined> {
    checkUserKey(key)
    this.#ctx.assertOpen()
    const entry = await this.#ctx.adapter.get(key)
    if (!entry || entry.owner === undefined) return undefined
    const h = isGroup(entry) ? await holderOf(this.#ctx, key, entry) : { owner: entry.owner, token: entry.created, ttl: entry.ttl, mode: 'exclusive' as const }
    if (!h) return undefined
    const holder: Holder = { owner: h.owner, token: h.token, mode: h.mode }
    if (h.ttl !== undefined) holder.ttl = h.ttl
    return holder
  }

  /**
   * Every lock under `prefix` (default: all) with who holds it and who
   * waits, as `navigator.locks.query()` answers: `held` in grant order
   * (by token), `pending` in line order. Keys held by leases and elections
   * under the prefix show as exclusive holds. Read in three reads, not one
   * snapshot.
   *
   * @example
   * const { held, pending } = await client.locks.query('lock:')
   * for (const p of pending) console.log(p.key, p.mode, p.owner, 'waiting since revision', p.since)
   */
  async query(prefix = ''): Promise<LockQuery> {
    checkPrefix(prefix)
    this.#ctx.assertOpen()
    return queryLocks(this.#ctx, prefix)
  }
}

export type { HeldLock, LockQuery, PendingLock } from './lock-query'
