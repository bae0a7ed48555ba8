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
import type { Check, CommitResult, Entry, Op, WatchEvent } from '../../core/contract/adapter'
import type { Database, LogRecord } from './schema'
import { settled } from './request'
import { prefixRange, TRIM_EVERY } from './schema'
import { expired, hasRevisionLeft, nextRevision, setWritten, toEntry, type counted, type Stored } from '../kit/write'

/** How many log keys a commit reads from its hint before it looks up the last key instead. */
const HINT_READ = 32

/**
 * Reads the store's revision, the last key of the log, which always keeps its
 * latest record, and hands it to `then` from the request's callback. With
 * `hint` (a revision this page knows the store has reached), the keys from
 * it, usually one or two: cheaper than a reverse cursor.
 */
export function lastRevision(log: IDBObjectStore, hint: number, then: (revision: number) => void): void {
  const last = () => {
    const cursor = log.openKeyCursor(null, 'prev')
    cursor.onsuccess = () => then(cursor.result ? (cursor.result.key as number) : 0)
  }
  if (hint <= 0) return last()
  const keys = log.getAllKeys(IDBKeyRange.lowerBound(hint), HINT_READ)
  keys.onsuccess = () => {
    const found = keys.result as number[]
    if (found.length > 0 && found.length < HINT_READ) then(found[found.length - 1]!)
    else last()
  }
}

/**
 * How durable a readwrite transaction must be before it completes, by what
 * it writes (docs/browser.md, "Durability"). A fencing token must never go
 * back, across a browser crash or an OS crash or power loss: a transaction
 * that may start an owned life — a take, whose revision is the new holder's
 * token, or any other `set` with an owner — is `strict` (flushed to disk
 * before it completes; the flush also covers every transaction before it).
 * One that only deletes (a release, a place in line left, an expiry, a dead
 * tab's end) is `relaxed`: lost to an OS crash, it comes back as an entry
 * whose owner died with the browser, which the reaper and the TTL end, and
 * its revision, never a token, may be used again. Anything else (the user's
 * data, counters) keeps the browser's `default` (Chromium 156: as relaxed).
 */
export function durabilityOf(requests: Array<Pick<CommitRequest, 'ops'>>): IDBTransactionDurability {
  let deletesOnly = true
  for (const { ops } of requests) {
    for (const op of ops) {
      if (op.type === 'set' && op.owner !== undefined) return 'strict'
      if (op.type !== 'delete') deletesOnly = false
    }
  }
  return deletesOnly ? 'relaxed' : 'default'
}

/**
 * Runs `body` in a readwrite transaction of both stores (`durability`, see
 * {@link durabilityOf}) and resolves
 * what it hands to `done` once the transaction has committed. `body` issues its
 * requests and does its writes from their callbacks, through `guard`, so the
 * transaction stays alive from the first request to the last write. An
 * exception in `body` or a callback aborts the transaction and rejects with
 * that exception; a failed request or an abort rejects with the transaction's
 * error.
 */
export function writeTx<T>(
  db: Database,
  body: (tx: IDBTransaction, guard: Guard, done: (value: T) => void) => void,
  durability: IDBTransactionDurability,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const tx = db.transaction(['entries', 'log'], 'readwrite', { durability })
    let value: T
    tx.oncomplete = () => resolve(value)
    tx.onabort = () => reject(tx.error ?? new DOMException('the transaction was aborted', 'AbortError'))
    // Once aborted, a transaction's requests fail: no guarded callback runs after a throw.
    const guard: Guard = (fn) => () => {
      try {
        fn()
      } catch (err) {
        reject(err)
        try {
          tx.abort()
        } catch {
          // Already finished or aborted.
        }
      }
    }
    guard(() => body(tx, guard, (v) => (value = v)))()
  })
}

/** Wraps a request callback so that an exception in it aborts the transaction and rejects its promise. */
export type Guard = (fn: () => void) => () => void

/** What a readwrite transaction did, for the watch feed and the expiry timers of every tab. */
export interface Outcome {
  records: LogRecord[]
  /** The earliest deadline among the entries this transaction wrote. */
  nextExpiry?: number
}


/**
 * Writes the log records (the last of which is the revision now) and, every
 * {@link TRIM_EVERY} revisions, drops history older than `historySize`
 * revisions: readers promise no more than `historySize`, so the few extra
 * records in between are never relied on.
 */
export function finish(tx: IDBTransaction, revision: number, records: LogRecord[], historySize: number): void {
  const log = tx.objectStore('log')
  for (const r of records) log.put(r)
  const before = revision - records.length
  // (Below historySize revisions the range is empty: a request that deletes nothing.)
  if (Math.floor(revision / TRIM_EVERY) > Math.floor(before / TRIM_EVERY)) {
    log.delete(IDBKeyRange.upperBound(revision - historySize))
  }
}

/** One `Adapter.commit` call; its ops were validated (no key twice) and its values copied. */
export interface CommitRequest {
  checks: Check[]
  ops: Op[]
  /** Made through a gate (./gate): the store marks what it writes at the gate's key, and lets a held gate take over marks. */
  gate?: ThroughGate
}

/** A gate a commit is made through: its key, its mode, and whether it is held when the transaction applies the commit. */
export interface ThroughGate {
  key: string
  mode: GateMode
  held(): boolean
}

/** The mark of an entry written through a gate: `x` exclusive, `s` shared. */
export type GateMode = 'x' | 's'

/** An entry as IndexedDB keeps it: with the mark of the gate it was written through, while that life lasts. */
type Record = Stored & { gate?: GateMode }

/**
 * Whether a held gate of `mode` may take its key over `e`: an entry written
 * through the key's gate whose writer cannot hold the gate beside it (any
 * mark, for an exclusive gate; an exclusive one, for a shared gate).
 */
function overridable(e: Record, gate: ThroughGate): boolean {
  return e.gate !== undefined && (gate.mode === 'x' || e.gate === 'x') && gate.held()
}

/**
 * Applies a batch of commits in one readwrite transaction, one after the
 * other, each with a revision of its own — as if each had had a transaction
 * to itself, but with one round trip of reads and one disk commit for all.
 * Every read the batch needs is issued at once, before any write. A commit
 * the store refuses (bad input, no revision left) gets its error in place of
 * a result, and writes nothing. `count` writes an `add` (the adapter passes
 * kit/write's `counted`); a store that never adds (zaris/elect's page store)
 * passes none and so loads no counter code.
 */
export function commitBatch(
  db: Database,
  requests: CommitRequest[],
  now: () => number,
  historySize: number,
  revisionHint = 0,
  count?: typeof counted,
): Promise<{ results: Array<CommitResult | Error>; outcome: Outcome }> {
  return writeTx(db, (tx, guard, done) => {
    const entries = tx.objectStore('entries')
    const keys = [...new Set(requests.flatMap((r) => [...r.checks.map((c) => c.key), ...r.ops.map((o) => o.key)]))]
    const found: Array<Stored | undefined> = []
    let stored = 0
    // The writes go from the callback of the last read to arrive, so no turn of the event loop passes in between.
    let pending = keys.length + 1
    // The batch's store time is read here, inside the running transaction: one taken before it
    // would be as old as the wait behind other tabs' transactions, and a reader queued behind a
    // writer would see the writer's entry with more time to live than its TTL.
    const arrived = () => {
      if (--pending > 0) return
      done(apply(entries, keys, found, stored, requests, now(), historySize, count))
      // Nothing more to ask: commit now rather than when the browser sees no request left
      // (one tab's acquire + release 5-15 % faster, a put 15 %: bench/FINDINGS.md, One tab).
      tx.commit?.()
    }
    keys.forEach((k, i) => {
      const get = entries.get(k)
      get.onsuccess = guard(() => {
        found[i] = get.result as Stored | undefined
        arrived()
      })
    })
    lastRevision(tx.objectStore('log'), revisionHint, (revision) =>
      guard(() => {
        stored = revision
        arrived()
      })(),
    )
  }, durabilityOf(requests))
}

/** The writes of a batch, once its reads are in: see {@link commitBatch}. */
function apply(
  entries: IDBObjectStore,
  keys: string[],
  found: Array<Stored | undefined>,
  stored: number,
  requests: CommitRequest[],
  now: number,
  historySize: number,
  count: typeof counted | undefined,
): { results: Array<CommitResult | Error>; outcome: Outcome } {
  const state = new Map<string, Stored | undefined>()
  let revision = stored
  const records: LogRecord[] = []
  keys.forEach((k, i) => {
    const e = found[i]
    if (e && expired(e, now) && hasRevisionLeft(revision)) {
      // Absent to this commit's checks; its end is recorded before the commit, as the sweep would have.
      revision++
      entries.delete(k)
      records.push({ revision, events: [{ type: 'expire', key: k, revision }] })
      state.set(k, undefined)
    } else {
      state.set(k, e)
    }
  })

  let nextExpiry: number | undefined
  const results = requests.map(({ checks, ops, gate }): CommitResult | Error => {
    const failed: Array<{ key: string; entry: Entry | undefined }> = []
    /** The gate's key, when a check found it free only because the held gate takes over the entry there. */
    let over: string | undefined
    for (const check of checks) {
      const e = state.get(check.key) as Record | undefined
      const absent = 'revision' in check ? check.revision === null : check.created === null
      let holds = absent ? e === undefined : 'revision' in check ? e?.revision === check.revision : e?.created === check.created
      if (!holds && absent && gate && check.key === gate.key && overridable(e!, gate)) {
        holds = true
        over = check.key
      }
      if (!holds) failed.push({ key: check.key, entry: e && toEntry(e, now) })
    }
    if (failed.length > 0) return { ok: false as const, failed }

    // Everything this commit writes is worked out before any of it is: a
    // commit refused here (an `add` over a non-number, no revision left)
    // writes nothing, and the other commits of the batch go on.
    let at: number
    const writes: Array<Stored | string> = []
    try {
      at = nextRevision(revision)
      for (const op of ops) {
        const existing = state.get(op.key) as Record | undefined
        if (op.type === 'delete') {
          if (existing) writes.push(op.key)
          continue
        }
        // A take over an entry the gate takes over is a new life, even by the same owner (its token must die).
        let w: Record
        // `count` is missing only for stores whose commits take no `add` (their types say so).
        if (op.type === 'add') w = count!(op, existing, at)
        else w = setWritten(op.key === over ? { ...op, fresh: true } : op, existing, at, now)
        // Every entry written at the gate's key is marked (the contract's rule); a delete leaves none.
        if (gate && op.key === gate.key) w.gate = gate.mode
        else if (existing?.gate && w.created === existing.created) w.gate = existing.gate
        writes.push(w)
      }
    } catch (err) {
      return err as Error
    }
    revision = at
    const events: WatchEvent[] = []
    const entriesWritten: Stored[] = []
    const deleted: string[] = []
    for (const w of writes) {
      if (typeof w === 'string') {
        entries.delete(w)
        state.set(w, undefined)
        deleted.push(w)
        events.push({ type: 'delete', key: w, revision })
        continue
      }
      if (w.expiresAt !== undefined) nextExpiry = Math.min(nextExpiry ?? Infinity, w.expiresAt)
      entries.put(w)
      state.set(w.key, w)
      entriesWritten.push(w)
      const event: WatchEvent = { type: 'put', key: w.key, revision, value: w.value, created: w.created }
      if (w.owner !== undefined) event.owner = w.owner
      if (w.ttl !== undefined) event.ttl = w.ttl
      events.push(event)
    }
    records.push({ revision, events })
    return { ok: true as const, revision, entries: entriesWritten.map((e) => toEntry(e, now)), deleted }
  })
  finish(entries.transaction, revision, records, historySize)
  const outcome: Outcome = { records }
  if (nextExpiry !== undefined) outcome.nextExpiry = nextExpiry
  return { results, outcome }
}

/**
 * Deletes every due entry and resolves the records written and the earliest
 * deadline left: the due entries and the revision are read together, the
 * deletes and log records go from the callback of the last, then the
 * earliest deadline is read after them.
 */
export function sweepTx(db: Database, now: number, historySize: number): Promise<Outcome> {
  return writeTx(db, (tx, guard, done) => {
    const entries = tx.objectStore('entries')
    const byExpiry = entries.index('expiresAt')
    // Asked first: the requests of a transaction succeed in the order they were made, so the due
    // entries are in by the time the revision is.
    const due = byExpiry.getAll(IDBKeyRange.upperBound(now))
    lastRevision(tx.objectStore('log'), 0, (stored) =>
      guard(() => {
        let revision = stored
        const records: LogRecord[] = []
        for (const e of due.result as Stored[]) {
          // A store with no revision left expires nothing (see RevisionExhaustedError).
          if (!hasRevisionLeft(revision)) break
          revision++
          entries.delete(e.key)
          records.push({ revision, events: [{ type: 'expire', key: e.key, revision }] })
        }
        finish(tx, revision, records, historySize)
        const outcome: Outcome = { records }
        done(outcome)
        const first = byExpiry.openKeyCursor()
        first.onsuccess = guard(() => {
          if (first.result) outcome.nextExpiry = first.result.key as number
          tx.commit?.()
        })
      })(),
    )
  }, 'relaxed')
}

/** The earliest deadline of any entry, or undefined. */
export async function earliestExpiry(db: Database): Promise<number | undefined> {
  const cursor = await settled(() => db.transaction('entries').objectStore('entries').index('expiresAt').openKeyCursor())
  return cursor ? (cursor.key as number) : undefined
}

/** The stored entry at `key` (possibly expired: the caller decides). */
export function readEntry(db: Database, key: string): Promise<Stored | undefined> {
  return settled(() => db.transaction('entries').objectStore('entries').get(key) as IDBRequest<Stored | undefined>)
}

/**
 * Up to `count` stored entries whose key starts with `prefix`, after the key
 * `after`, in key order (possibly expired: the caller decides). IndexedDB
 * orders string keys by UTF-16 code units, as the contract does, so the
 * range holds exactly the keys under the prefix.
 */
export async function readPrefix(db: Database, prefix: string, after?: string, count?: number): Promise<Stored[]> {
  const range = pageRange(prefix, after)
  if (range === null) return []
  return settled(() => db.transaction('entries').objectStore('entries').getAll(range, count) as IDBRequest<Stored[]>)
}

/** The keys under `prefix` after `after`; null when there are none. */
function pageRange(prefix: string, after: string | undefined): IDBKeyRange | undefined | null {
  const whole = prefixRange(prefix)
  if (after === undefined || after < prefix) return whole
  // Past the prefix's keys: none left. Under it (it starts with the prefix): below the range's end.
  if (!after.startsWith(prefix)) return null
  if (!whole || whole.upper === undefined) return IDBKeyRange.lowerBound(after, true)
  return IDBKeyRange.bound(after, whole.upper, true, true)
}

/** The store's revision and every log record after `after`, read together. */
export function readLog(db: Database, after: number): Promise<{ revision: number; records: LogRecord[] }> {
  return new Promise((resolve, reject) => {
    const tx = db.transaction('log')
    const log = tx.objectStore('log')
    const records = log.getAll(IDBKeyRange.lowerBound(after, true))
    let revision = 0
    lastRevision(log, 0, (r) => (revision = r))
    tx.oncomplete = () => resolve({ revision, records: records.result as LogRecord[] })
    tx.onabort = () => reject(tx.error ?? new DOMException('the transaction was aborted', 'AbortError'))
  })
}
