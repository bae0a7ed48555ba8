/**
 * Reading a namespace's history a page at a time, for a watch that resumes
 * from an old revision and for `GET events`: from the adapter's `history`
 * capability where it has one (the memory and SQLite stores read their log by
 * position, O(page)), else through a watch from that revision whose events
 * past the page are dropped as they come (O(history) per page, in CPU, but
 * never more than a page in memory). Either way a page stops between two
 * revisions, so `through` says up to where it is complete.
 *
 * @module
 */
import type { Adapter, HistoryLimits, HistoryPage, WatchEvent } from '../core/contract/adapter'

/**
 * One page of `adapter`'s history after `after` under `prefix`. Rejects with
 * the adapter's `CompactedError` for history it no longer keeps. Without
 * `more`, `through` may stop short of the store's revision (the caller knows
 * the store's position and raises it).
 */
export async function readHistory(adapter: Adapter, prefix: string, after: number, limits: HistoryLimits): Promise<HistoryPage> {
  if (adapter.capabilities?.history && adapter.history) return adapter.history(prefix, after, limits)
  const events: WatchEvent[] = []
  let bytes = 0
  let through = after
  let more = false
  let failed: Error | undefined
  // The whole namespace is followed (and filtered here) so that `through` moves on even where the prefix saw no change.
  const unsubscribe = await adapter.watch(
    '',
    {
      event: (ev) => {
        if (more) return
        if (ev.revision !== through && (events.length >= limits.maxEvents || bytes >= limits.maxBytes)) {
          more = true
          return
        }
        through = ev.revision
        if (!ev.key.startsWith(prefix)) return
        events.push(ev)
        bytes += 64 + 2 * ev.key.length + (ev.value === undefined ? 0 : JSON.stringify(ev.value).length)
      },
      error: (err) => {
        failed ??= err
      },
    },
    after,
  )
  unsubscribe()
  if (failed) throw failed
  return { events, through, more }
}
