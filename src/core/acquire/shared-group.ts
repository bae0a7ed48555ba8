/**
 * A lock held in shared mode: its layout in the store, which every part of
 * the lock family reads the same way.
 *
 * - The lock key holds the *group*: an entry owned by {@link SHARED_OWNER},
 *   no TTL, whose value counts the shared holds (`add` +1 to join, -1 to
 *   leave). Its life (`created`) is the group's: a shared hold is alive only
 *   while the lock key carries that life *and* its own share entry carries
 *   its token. An exclusive acquire over a free key is unchanged — one
 *   commit, `{ key, revision: null }` — and fails while a group is there.
 * - Each shared hold is an entry of its own under U+0001 `s` + key + U+0001,
 *   owned by its client, with its TTL, renewed like a lock. A holder that
 *   crashes stops renewing and its share expires (or is ended at once by a
 *   store that knows its client is gone); the count does not go down then,
 *   so the count is never below the live shares, only above.
 * - A group is *drained* when none of its shares is live (shares created
 *   before the group's life belong to an older group and do not count). The
 *   last holder to release sees the count reach 0 and deletes the group (by
 *   its revision, so a holder joining meanwhile keeps it). A group left by a
 *   crashed holder is taken over by the next exclusive acquire, which lists
 *   the shares and commits only if the group is still at the revision it
 *   read *before* listing: any join since moved it.
 *
 * Why this needs no new contract member: every decision is a check on one
 * key (the group's revision or life, a share's life, the intent's absence),
 * which every store does (etcd compares per key; Redis Cluster keeps a
 * namespace in one hash slot), and the count is the `add` op.
 *
 * @module
 */
import type { Entry } from '../contract/adapter'
import type { Context } from '../context'
import { listAll } from '../contract/pages'
import { SEP, SHARE_PREFIX, SHARED_OWNER } from '../contract/reserved'
import type { Sight } from './wait'

/** Whether the entry at a lock key is a shared group. */
export function isGroup(entry: Entry | undefined): boolean {
  return entry?.owner === SHARED_OWNER
}

/** The prefix of the share entries of `key`. */
export function sharePrefix(key: string): string {
  return SHARE_PREFIX + key + SEP
}

/** Whether `k` is a share entry of `key` (not of another key whose name extends it). */
export function isShareOf(key: string, k: string): boolean {
  const prefix = sharePrefix(key)
  return k.startsWith(prefix) && !k.includes(SEP, prefix.length)
}

/** The live shares of `group`, the group at `key` as read before this list. */
export async function liveShares(ctx: Context, key: string, group: Entry): Promise<Entry[]> {
  const listed = await listAll(ctx.adapter, sharePrefix(key))
  return listed.filter((e) => isShareOf(key, e.key) && e.created >= group.created)
}

/** What an exclusive waiter sees when `shares` of `group` block it: the shares; watched at the group and under the share prefix. */
export function groupSight(key: string, group: Entry, shares: Entry[]): Sight {
  let from = group.revision
  for (const s of shares) from = Math.max(from, s.revision)
  return {
    blockers: shares,
    watches: [
      { key, prefix: false, from: group.revision },
      { key: sharePrefix(key), prefix: true, from },
    ],
  }
}
