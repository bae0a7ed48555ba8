/**
 * Who holds which lock and who waits for it, read from the store: the
 * answer of `locks.query()` and of `locks.holder()` for a lock held in
 * shared mode (loaded on first use). Three reads (not one
 * snapshot: a hold or waiter that changes meanwhile may show either way) —
 * the keys under the prefix, the shared holds under it, the wait lines.
 *
 * @module
 */
import type { Adapter, Entry } from './contract/adapter'
import type { Context } from './context'
import type { LockMode } from './hold/hold'
import { listAll, pagesOf } from './contract/pages'
import { isReservedKey, QUEUE_PREFIX, SHARE_PREFIX, SHARED_OWNER, userKeyOf } from './contract/reserved'
import { isShareOf, liveShares, sharePrefix } from './acquire/shared-group'

/** A held lock, from {@link queryLocks}. */
export interface HeldLock {
  /** The lock key. */
  key: string
  /** How it is held. */
  mode: LockMode
  /** The holding client's id. */
  owner: string
  /** The hold's fencing token. */
  token: number
  /** Milliseconds left on the store's clock. */
  ttl?: number
}

/** A waiter in a lock's line, from {@link queryLocks}. */
export interface PendingLock {
  /** The lock key. */
  key: string
  /** How it waits to hold. */
  mode: LockMode
  /** The waiting client's id. */
  owner: string
  /** The store revision at which it joined the line: the line's order. */
  since: number
}

/** What `locks.query()` answers: held in grant order (by token), pending in line order. */
export interface LockQuery {
  /** The holds, in grant order (by token). */
  held: HeldLock[]
  /** The waiters, in line order. */
  pending: PendingLock[]
}

/** Who holds and who waits, for every lock key under `prefix`. */
export async function queryLocks(ctx: Context, prefix: string): Promise<LockQuery> {
  const list = (p: string) => listAll(ctx.adapter, p)
  const [entries, shares, line] = await Promise.all([list(prefix), list(SHARE_PREFIX + prefix), list(QUEUE_PREFIX + prefix)])
  const groups = new Map<string, Entry>()
  const held: HeldLock[] = []
  for (const e of entries) {
    if (isReservedKey(e.key) || e.owner === undefined) continue
    if (e.owner === SHARED_OWNER) groups.set(e.key, e)
    else held.push(heldOf(e.key, 'exclusive', e))
  }
  for (const s of shares) {
    const key = userKeyOf(s.key, SHARE_PREFIX)
    const group = key === undefined ? undefined : groups.get(key)
    if (group && s.created >= group.created && s.owner !== undefined) held.push(heldOf(key!, 'shared', s))
  }
  const pending: PendingLock[] = []
  for (const p of line) {
    const key = userKeyOf(p.key, QUEUE_PREFIX)
    // Lines of semaphores (keys of their own, reserved) are not locks'.
    if (key === undefined || isReservedKey(key) || p.owner === undefined) continue
    pending.push({ key, mode: p.value === 'shared' ? 'shared' : 'exclusive', owner: p.owner, since: p.created })
  }
  held.sort((a, b) => a.token - b.token)
  pending.sort((a, b) => a.since - b.since)
  return { held, pending }
}

/**
 * How many holds {@link queryLocks} lists in a whole store (its `held`'s
 * length under the prefix ''), read a page at a time so that a count holds
 * one page, not the store: every owned key outside zaris's own (exclusive
 * locks, leases, candidacies), and for a lock held in shared mode its live
 * shares, not its group entry. Wait lines, intents and permits are not holds
 * of a lock.
 *
 * @example
 * const held = await countHolds(adapter)
 */
export async function countHolds(adapter: Adapter): Promise<number> {
  let n = 0
  for await (const entries of pagesOf(adapter, '', PAGE)) {
    for (const e of entries) {
      if (isReservedKey(e.key) || e.owner === undefined) continue
      if (e.owner !== SHARED_OWNER) n++
      else n += await countShares(adapter, e)
    }
  }
  return n
}

/** Most entries a count reads at once. */
const PAGE = 1_000

/** The live shares of the group `group` (as in {@link liveShares}), counted a page at a time. */
async function countShares(adapter: Adapter, group: Entry): Promise<number> {
  let n = 0
  for await (const shares of pagesOf(adapter, sharePrefix(group.key), PAGE)) {
    for (const s of shares) if (isShareOf(group.key, s.key) && s.created >= group.created && s.owner !== undefined) n++
  }
  return n
}

/** The earliest live shared holder of lock `key`, whose group `group` was just read. */
export async function holderOf(ctx: Context, key: string, group: Entry): Promise<HeldLock | undefined> {
  const shares = await liveShares(ctx, key, group)
  let first: Entry | undefined
  for (const s of shares) if (s.owner !== undefined && (!first || s.created < first.created)) first = s
  return first && heldOf(key, 'shared', first)
}

function heldOf(key: string, mode: LockMode, e: Entry): HeldLock {
  const h: HeldLock = { key, mode, owner: e.owner!, token: e.created }
  if (e.ttl !== undefined) h.ttl = e.ttl
  return h
}
