/**
 * The store's transactions. Each is one IndexedDB transaction in which only
 * IndexedDB requests are awaited (anything else would let it auto-commit
 * half way), so a commit's checks, writes, log record and revision bump land
 * together or not at all, and readwrite transactions of all tabs serialize.
 *
 * A commit reads only the keys it names and the last log key (the
 * revision), then writes the entries and one log record per revision: two
 * object stores. An entry it reads whose deadline has passed is expired
 * right there (a revision and an `expire` event of its own, before the
 * commit's) and counts as absent; every other due entry is left to the
 * expiry timer's sweep. Since the transactions serialize, whichever gets to
 * an expired entry first expires it, once.
 *
 * @module
 */
import type { Check, CommitResult, Entry, Op, WatchEvent } from '../../core/adapter'
import type { Database, LogRecord, StoredEntry } from './schema'
import { prefixRange, TRIM_EVERY } from './schema'

type WriteTx = ReturnType<typeof writeTx>

function writeTx(db: Database) {
  return db.transaction(['entries', 'log'], 'readwrite')
}

interface LogKeys {
  openKeyCursor(query: null, direction: 'prev'): Promise<{ key: unknown } | null>
  getAllKeys(query: IDBKeyRange, count: number): Promise<number[]>
}

/** How many log keys a commit reads from its hint before it looks up the last key instead. */
const HINT_READ = 32

/**
 * The store's revision: the last key of the log, which always keeps its
 * latest record. With `hint` (a revision this page knows the store has
 * reached), the keys from it, usually one or two: cheaper than a reverse cursor.
 */
async function lastRevision(log: LogKeys, hint = 0): Promise<number> {
  if (hint > 0) {
    const keys = await log.getAllKeys(IDBKeyRange.lowerBound(hint), HINT_READ)
    if (keys.length > 0 && keys.length < HINT_READ) return keys[keys.length - 1]!
  }
  const cursor = await log.openKeyCursor(null, 'prev')
  return cursor ? (cursor.key as number) : 0
}

/** What a readwrite transaction did, for the watch feed and the expiry timers of every tab. */
export interface Outcome {
  records: LogRecord[]
  /** The earliest deadline among the entries this transaction wrote. */
  nextExpiry?: number
}

/** True when `e` has expired at `now`. */
export function expired(e: StoredEntry, now: number): boolean {
  return e.expiresAt !== undefined && e.expiresAt <= now
}

/** The entry as a read returns it. */
export function toEntry(e: StoredEntry, now: number): Entry {
  const entry: Entry = { key: e.key, value: e.value, revision: e.revision, created: e.created }
  if (e.owner !== undefined) entry.owner = e.owner
  if (e.expiresAt !== undefined) entry.ttl = Math.max(0, e.expiresAt - now)
  return entry
}

/** Deletes every due entry inside `tx`: returns the revision after, the log records, and the keys deleted. */
async function expireDue(tx: WriteTx, now: number): Promise<{ revision: number; records: LogRecord[]; keys: Set<string> }> {
  const [stored, due] = await Promise.all([
    lastRevision(tx.objectStore('log')),
    tx.objectStore('entries').index('expiresAt').getAll(IDBKeyRange.upperBound(now)),
  ])
  let revision = stored
  const records: LogRecord[] = []
  const keys = new Set<string>()
  const entries = tx.objectStore('entries')
  for (const e of due) {
    revision++
    void entries.delete(e.key)
    keys.add(e.key)
    records.push({ revision, events: [{ type: 'expire', key: e.key, revision }] })
  }
  return { revision, records, keys }
}

/**
 * Writes the log records (the last of which is the revision now) and, every
 * {@link TRIM_EVERY} revisions, drops history older than `historySize`
 * revisions: readers promise no more than `historySize`, so the few extra
 * records in between are never relied on.
 */
function finish(tx: WriteTx, revision: number, records: LogRecord[], historySize: number): void {
  if (records.length === 0) return
  const log = tx.objectStore('log')
  for (const r of records) void log.put(r)
  const before = revision - records.length
  if (revision > historySize && Math.floor(revision / TRIM_EVERY) > Math.floor(before / TRIM_EVERY)) {
    void log.delete(IDBKeyRange.upperBound(revision - historySize))
  }
}

/** Aborts `tx` (ignoring that it may already be over) and rethrows. */
async function run<T>(tx: WriteTx, body: () => Promise<T>): Promise<T> {
  try {
    const result = await body()
    await tx.done
    return result
  } catch (err) {
    try {
      tx.abort()
    } catch {
      // Already finished or aborted.
    }
    tx.done.catch(() => {})
    throw err
  }
}

/** One `Adapter.commit` call; its ops were validated (no key twice) and its values copied. */
export interface CommitRequest {
  checks: Check[]
  ops: Op[]
}

/**
 * Applies a batch of commits in one readwrite transaction, one after the
 * other, each with a revision of its own — as if each had had a transaction
 * to itself, but with one round trip of reads and one disk commit for all.
 * Every read the batch needs is issued at once, before any write.
 */
export function commitBatch(
  db: Database,
  requests: CommitRequest[],
  now: number,
  historySize: number,
  revisionHint = 0,
): Promise<{ results: CommitResult[]; outcome: Outcome }> {
  const tx = writeTx(db)
  return run(tx, async () => {
    const entries = tx.objectStore('entries')
    const keys = [...new Set(requests.flatMap((r) => [...r.checks.map((c) => c.key), ...r.ops.map((o) => o.key)]))]
    const [stored, ...found] = await Promise.all([lastRevision(tx.objectStore('log'), revisionHint), ...keys.map((k) => entries.get(k))])
    const state = new Map<string, StoredEntry | undefined>()
    let revision = stored as number
    const records: LogRecord[] = []
    keys.forEach((k, i) => {
      const e = found[i] as StoredEntry | undefined
      if (e && expired(e, now)) {
        // Absent to this commit's checks; its end is recorded before the commit, as the sweep would have.
        revision++
        void entries.delete(k)
        records.push({ revision, events: [{ type: 'expire', key: k, revision }] })
        state.set(k, undefined)
      } else {
        state.set(k, e)
      }
    })

    let nextExpiry: number | undefined
    const results: CommitResult[] = requests.map(({ checks, ops }) => {
      const failed: Array<{ key: string; entry: Entry | undefined }> = []
      for (const check of checks) {
        const e = state.get(check.key)
        const holds =
          'revision' in check
            ? check.revision === null ? e === undefined : e?.revision === check.revision
            : check.created === null ? e === undefined : e?.created === check.created
        if (!holds) failed.push({ key: check.key, entry: e && toEntry(e, now) })
      }
      if (failed.length > 0) return { ok: false as const, failed }

      revision++
      const events: WatchEvent[] = []
      const written: StoredEntry[] = []
      const deleted: string[] = []
      for (const op of ops) {
        const existing = state.get(op.key)
        if (op.type === 'delete') {
          if (existing) {
            void entries.delete(op.key)
            state.set(op.key, undefined)
            deleted.push(op.key)
            events.push({ type: 'delete', key: op.key, revision })
          }
          continue
        }
        const e: StoredEntry = { key: op.key, value: op.value, revision, created: existing && !op.fresh ? existing.created : revision }
        if (op.owner !== undefined) e.owner = op.owner
        if (op.ttl !== undefined) {
          e.ttl = op.ttl
          e.expiresAt = now + op.ttl
          nextExpiry = Math.min(nextExpiry ?? Infinity, e.expiresAt)
        }
        void entries.put(e)
        state.set(op.key, e)
        written.push(e)
        const event: WatchEvent = { type: 'put', key: op.key, revision, value: op.value, created: e.created }
        if (op.owner !== undefined) event.owner = op.owner
        if (op.ttl !== undefined) event.ttl = op.ttl
        events.push(event)
      }
      records.push({ revision, events })
      return { ok: true as const, revision, entries: written.map((e) => toEntry(e, now)), deleted }
    })
    finish(tx, revision, records, historySize)
    const outcome: Outcome = { records }
    if (nextExpiry !== undefined) outcome.nextExpiry = nextExpiry
    return { results, outcome }
  })
}

/** Expires what is due; resolves the records written and the earliest deadline left. */
export function sweepTx(db: Database, now: number, historySize: number): Promise<Outcome> {
  const tx = writeTx(db)
  return run(tx, async () => {
    const expiry = await expireDue(tx, now)
    finish(tx, expiry.revision, expiry.records, historySize)
    const outcome: Outcome = { records: expiry.records }
    const next = await earliestIn(tx.objectStore('entries').index('expiresAt'))
    if (next !== undefined) outcome.nextExpiry = next
    return outcome
  })
}

async function earliestIn(index: { openKeyCursor(): Promise<{ key: unknown } | null> }): Promise<number | undefined> {
  const cursor = await index.openKeyCursor()
  return cursor ? (cursor.key as number) : undefined
}

/** The earliest deadline of any entry, or undefined. */
export function earliestExpiry(db: Database): Promise<number | undefined> {
  return earliestIn(db.transaction('entries').store.index('expiresAt'))
}

/** The stored entry at `key` (possibly expired: the caller decides). */
export function readEntry(db: Database, key: string): Promise<StoredEntry | undefined> {
  return db.get('entries', key)
}

/** Every stored entry whose key starts with `prefix`, in key order (possibly expired). */
export async function readPrefix(db: Database, prefix: string): Promise<StoredEntry[]> {
  const all = await db.getAll('entries', prefixRange(prefix))
  return all.filter((e) => e.key.startsWith(prefix))
}

/** The store's revision and every log record after `after`, read together. */
export async function readLog(db: Database, after: number): Promise<{ revision: number; records: LogRecord[] }> {
  const log = db.transaction('log').store
  const [revision, records] = await Promise.all([lastRevision(log), log.getAll(IDBKeyRange.lowerBound(after, true))])
  return { revision, records }
}
