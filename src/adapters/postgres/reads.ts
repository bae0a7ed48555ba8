/**
 * Reads of a namespace: an entry, a page of entries, a page of the log.
 *
 * A read never writes while what it reads is live. An entry it finds past
 * its deadline is expired first (`sweep`, which takes the namespace's row
 * and gives the expiry its revision), then read again, so a read never shows
 * as gone an entry whose expiry has no revision yet. An entry still there
 * after the sweep is held by a fence (`fence.ts`) and is live, with ttl 0,
 * until the fence's transaction ends.
 *
 * @module
 */
import type { Entry, HistoryLimits, HistoryPage, ListPage, WatchEvent } from '../../core/contract/adapter'
import { CompactedError, isZarisError } from '../../core/contract/errors'
import { sleep, systemClock } from '../../core/time/clock'
import { ENTRY_COLUMNS, keyBytes, prefixEnd, rowEntry, rowEvent, type EntryRow, type EventRow } from './codec'
import type { Target } from './commit'

/** The live entry at `key`, or undefined. */
export async function readEntry(target: Target, key: string): Promise<Entry | undefined> {
  const k = keyBytes(key)
  for (let swept = false; ; swept = true) {
    const r = await select<EntryRow>(target, 'get', `SELECT ${ENTRY_COLUMNS} FROM @S.entries WHERE ns = $1 AND k = $2`, [target.namespace, k])
    const row = r[0]
    if (row === undefined) return undefined
    if (swept || row.left === null || row.left > 0) return seen(target, rowEntry(row))
    await sweep(target, [k])
  }
}

/** A page of the live entries under `prefix` after `after`, at most `limit` (all when undefined). */
export async function readPage(target: Target, prefix: string, after: string | undefined, limit: number | undefined): Promise<ListPage> {
  // Keys under the prefix form one range that starts at the prefix: an `after` before it lists from its start.
  const strict = after !== undefined && after >= prefix
  const from = keyBytes(strict ? after : prefix)
  const end = prefixEnd(keyBytes(prefix))
  const text =
    `SELECT ${ENTRY_COLUMNS} FROM @S.entries WHERE ns = $1 AND k ${strict ? '>' : '>='} $2` +
    (end === null ? '' : ' AND k < $3') +
    ' ORDER BY k' +
    (limit === undefined ? '' : ` LIMIT ${limit + 1}`)
  const args = end === null ? [target.namespace, from] : [target.namespace, from, end]
  for (let swept = false; ; swept = true) {
    const rows = await select<EntryRow>(target, 'list', text, args)
    const due = rows.filter((row) => row.left !== null && row.left <= 0)
    if (swept || due.length === 0) {
      const more = limit !== undefined && rows.length > limit
      return { entries: (more ? rows.slice(0, limit) : rows).map((row) => seen(target, rowEntry(row))), more }
    }
    await sweep(target, due.map((row) => row.k))
  }
}

/** One page of the log after revision `after`, for keys under `prefix` (capability `history`). */
export async function readHistory(target: Target, prefix: string, after: number, limits: HistoryLimits): Promise<HistoryPage> {
  const start = keyBytes(prefix)
  const end = prefixEnd(start)
  const head = await select<{ revision: string; compacted: string }>(target, 'history', 'SELECT revision, compacted FROM @S.stores WHERE ns = $1', [target.namespace])
  const revision = Number(head[0]?.revision ?? 0)
  const compacted = Number(head[0]?.compacted ?? 0)
  if (after < compacted) {
    throw new CompactedError(`read from revision ${after}: history up to revision ${compacted} is gone; read the current state and watch from its revision`)
  }
  const events: WatchEvent[] = []
  let bytes = 0
  let through = after
  let cursor = { rev: after, seq: 2 ** 31 - 1 }
  for (;;) {
    const rows = await select<EventRow>(
      target,
      'history',
      `SELECT revision, seq, type, k, value, created, owner, ttl FROM @S.events
       WHERE ns = $1 AND (revision, seq) > ($2, $3) AND revision <= $4 AND type IN ('p', 'd', 'e') AND k >= $5${end === null ? '' : ' AND k < $6'}
       ORDER BY revision, seq LIMIT 500`,
      end === null ? [target.namespace, cursor.rev, cursor.seq, revision, start] : [target.namespace, cursor.rev, cursor.seq, revision, start, end],
    )
    for (const row of rows) {
      const rev = Number(row.revision)
      // Cut only between revisions, so `through` is complete.
      if (rev !== through && (events.length >= limits.maxEvents || bytes >= limits.maxBytes)) return { events, through, more: true }
      through = rev
      events.push(rowEvent(row))
      bytes += 64 + 2 * (row.k.length + (row.value?.length ?? 0))
      cursor = { rev, seq: row.seq }
    }
    if (rows.length < 500) return { events, through: Math.max(through, revision), more: false }
  }
}

/** Notes that the namespace reached at least the entry's revision. */
function seen(target: Target, entry: Entry): Entry {
  if (entry.revision > target.known.revision) target.known.revision = entry.revision
  return entry
}

/** Expires what is due among `keys` (and more of the namespace): the read then looks again. */
async function sweep(target: Target, keys: Buffer[]): Promise<void> {
  await select(target, 'expiry', 'SELECT @S.sweep($1, $2) AS left', [target.namespace, keys])
  target.changed()
}

/** Runs a read, again while Postgres cannot answer (reads change nothing), for up to `target.timeout` ms. */
async function select<R>(target: Target, what: string, text: string, values: unknown[]): Promise<R[]> {
  const deadline = systemClock.now() + target.timeout
  for (let attempt = 0; ; attempt++) {
    try {
      return (await target.connection.query<R>(what, text.replaceAll('@S', target.schema), values, target.callTimeout)).rows
    } catch (err) {
      if (!isZarisError(err, 'UNAVAILABLE') || systemClock.now() >= deadline) throw err
      await sleep(systemClock, Math.min(1_000, 25 * 2 ** attempt))
    }
  }
}
