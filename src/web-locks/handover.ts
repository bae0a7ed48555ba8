/**
 * The grant that a release makes, before the release's request settles.
 * The Web Locks API releases a lock and grants the requests it lets through
 * in one step, before the released request's promise settles: right after
 * `await locks.request(…)`, `query()` shows them held, and a shared
 * `ifAvailable` request beside them is granted. A zaris store that hands
 * a lock over in the release's own commit hands it to one waiter: shared
 * waiters behind it join the group with commits of their own; and on a
 * store that does not (etcd) every waiter takes the lock once it hears of
 * the release. So the facade waits, after its release, for the waiters
 * the release let through — the same on every store:
 *
 * - It reads the key's line (line.ts: one list; nothing more when nobody
 *   waits, or when more wait than one page holds).
 * - Someone waits: it reads the holder. An exclusive holder (a waiter
 *   already granted), or shared holders before an exclusive waiter, means
 *   the release let through no one still to come. Otherwise the release let
 *   through the head of the line: its first waiter if it is exclusive and
 *   the lock is free, else every shared waiter before the first exclusive.
 * - It waits until each of those has left the line — the commit that grants
 *   a waiter deletes its place, so it holds now, visibly — or gave up
 *   (its place deleted or expired), watching the line; at most
 *   {@link GRANT_WAIT} ms, so that a frozen waiter cannot hold up the
 *   request that released (the core passes such a waiter after a second).
 *
 * @module
 */
import type { Client } from '../core/client'
import type { Entry } from '../core/contract/adapter'
import { lineOf, linePrefix } from './line'

/** The longest a release waits for the waiters it let through to be granted, in ms. */
export const GRANT_WAIT = 2_000
/** How often, in ms, a wait for grants looks whether its client was closed. */
const CLOSED_POLL = 50

/** Resolves once the waiters that releasing `key` let through hold it or left the line (see the module doc); never rejects. */
export async function grantsAfterRelease(client: Client, key: string): Promise<void> {
  const prefix = linePrefix(key)
  if (!prefix) return
  try {
    await watchedUntilGone(client, prefix, async () => letThrough(client, key, (await lineOf(client, prefix)) ?? []))
  } catch {
    // A closed client, an unreachable store: the release itself was done; the grants are the store's.
  }
}

/** The places in `line` whose waiters the release let through (see the module doc). */
async function letThrough(client: Client, key: string, line: Entry[]): Promise<Entry[]> {
  if (line.length === 0) return []
  const holder = await client.locks.holder(key)
  if (holder?.mode === 'exclusive') return []
  if (!holder && line[0]!.value !== 'shared') return [line[0]!]
  const shared: Entry[] = []
  for (const place of line) {
    if (place.value !== 'shared') break
    shared.push(place)
  }
  return shared
}

/**
 * Subscribes to the line under `prefix`, then asks `which()` for the places
 * to wait for, and resolves once every one of them is deleted or expired
 * (or after {@link GRANT_WAIT} ms, when the watch fails, or when the client closes).
 */
async function watchedUntilGone(client: Client, prefix: string, which: () => Promise<Entry[]>): Promise<void> {
  const gone = new Set<string>()
  let waiting: Set<string> | undefined
  let done!: () => void
  const over = new Promise<void>((resolve) => (done = resolve))
  const unsubscribe = await client.adapter.watch(prefix, {
    event(ev) {
      if (ev.type === 'put') return
      gone.add(ev.key)
      waiting?.delete(ev.key)
      if (waiting?.size === 0) done()
    },
    error: () => done(),
  })
  const timer = setTimeout(done, GRANT_WAIT)
  // A client closed meanwhile ends the wait (its adapter's watch may outlive it: a shared store).
  const closed = setInterval(() => client.closed && done(), CLOSED_POLL)
  try {
    waiting = new Set((await which()).map((e) => e.key).filter((k) => !gone.has(k)))
    if (waiting.size > 0) await over
  } finally {
    clearTimeout(timer)
    clearInterval(closed)
    await Promise.resolve(unsubscribe()).catch(() => {})
  }
}
