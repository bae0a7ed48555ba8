/**
 * A watch from a past revision that etcd serves at once when it can.
 *
 * etcd serves a watcher at once only if it starts after the store's current
 * revision (a *synced* watcher). A watcher that starts at or before it is
 * *unsynced*: etcd replays its history in a loop that runs every 100 ms, and
 * every event at its keys, also one made after it was created, waits for that
 * loop. The core watches from the revision of the entry it saw (so that no
 * change between its read and its watch is lost), and any write anywhere in
 * etcd after that entry (a waiter joining the line, another namespace's
 * commit) made such a watch unsynced: the release a waiter waited for reached
 * it 0-100 ms late (bench handover-8, etcd adapter: p50 56 ms, where one
 * write takes 2 ms).
 *
 * So a watch from the past is made in two steps:
 *
 * 1. A watcher from now (synced). etcd says where it starts: after revision
 *    `W`. Its events are held back, not delivered yet.
 * 2. One read asks whether anything under the watched range changed from the
 *    caller's first revision `from` up to `W`: no key live at `W` was written
 *    at or after `from` (`min_mod_revision`), and the range held as many
 *    keys at every revision from `from - 1` to `W`. Then nothing changed: the
 *    last change in the window would have been a write (a key at `W` carrying
 *    its revision) or only deletes (one key fewer from that revision on); a
 *    key made and expired inside the window shows as one key more at the
 *    revisions it lived, which is why every revision is counted, not only the
 *    two ends. The watcher from now then misses nothing: the held events are
 *    delivered, and so is every later one.
 *
 * If anything changed in the window, or it is longer than
 * {@link MAX_WINDOW} revisions, or the read fails (a compacted revision),
 * the watcher from now is dropped with its held events and the watch is
 * made from `from` as before: unsynced, late, complete (and a compacted
 * history is reported by that watch, as the contract wants).
 *
 * @module
 */
import type { IRequestOp } from 'etcd3'
import type { Unsubscribe, WatchEvent, WatchSink } from '../../core/contract/adapter'
import type { Connection } from './connection'
import type { Layout } from './layout'

/** Most revisions one look counts (one range each; etcd allows 128 operations per transaction). */
export const MAX_WINDOW = 100

/**
 * Watches the zaris keys under `prefix` from revision `from` (the first
 * revision to deliver), served by a synced etcd watcher when nothing under
 * them changed from `from` until the watcher started (see the module doc).
 */
export async function watchFromPast(connection: Connection, layout: Layout, prefix: string, sink: WatchSink, from: number): Promise<Unsubscribe> {
  const timeout = connection.options.timeout
  const held: WatchEvent[] = []
  let failure: Error | undefined
  let state: 'holding' | 'live' | 'dropped' = 'holding'
  let start = 0
  const fromNow: WatchSink = {
    event: (ev) => {
      // A member behind the revision the caller asked from may start the watcher earlier.
      if (ev.revision < from) return
      if (state === 'holding') held.push(ev)
      else if (state === 'live') sink.event(ev)
    },
    error: (err) => {
      if (state === 'holding') failure ??= err
      else if (state === 'live') sink.error(err)
    },
    reconnecting: () => {
      if (state === 'live') sink.reconnecting?.()
    },
  }
  const stop = await connection.watches.subscribe(layout, prefix, fromNow, 0, timeout, (first) => (start = first))
  if (await unchanged(connection, layout.prefix(prefix), from, start - 1)) {
    state = 'live'
    for (const ev of held) sink.event(ev)
    if (failure) sink.error(failure)
    return stop
  }
  state = 'dropped'
  // The watcher from the past first: dropping the last watcher of the stream first would close the stream.
  try {
    return await connection.watches.subscribe(layout, prefix, sink, from, timeout)
  } finally {
    stop()
  }
}

/** Whether nothing in `range` changed from revision `from` through `through` (see the module doc). */
export async function unchanged(connection: Connection, range: { key: Buffer; range_end: Buffer }, from: number, through: number): Promise<boolean> {
  if (through < from) return true // an empty window
  if (from < 2 || through - from + 2 > MAX_WINDOW) return false
  const reads: IRequestOp[] = [{ request_range: { ...range, keys_only: true, limit: 1, min_mod_revision: from, revision: through } }]
  for (let rev = from - 1; rev <= through; rev++) reads.push({ request_range: { ...range, count_only: true, revision: rev } })
  let res
  try {
    res = await connection.txn('look for changes before a watch', { compare: [], success: reads, failure: [] })
  } catch {
    return false // a compacted revision, or etcd out of reach: the watch from `from` says what is wrong
  }
  const [written, ...counts] = res.responses.map((r) => r.response_range)
  if (written!.kvs.length > 0) return false
  const count = Number(counts[0]!.count)
  return counts.every((c) => Number(c.count) === count)
}
