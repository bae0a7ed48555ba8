/**
 * What one write transaction does to a namespace, with one "now" read once
 * at its start: expiries that are due, the end of gone owners, a commit.
 * Every change takes the next revision and writes its events (the
 * namespace's revision is its last event's), and the namespace's row only
 * where it must change (see {@link Ledger.finish}). Runs inside
 * SQLite's write lock (BEGIN IMMEDIATE), so the processes of the machine
 * take turns, and whatever one of them decides (a revision, an expiry, a
 * grant) every other sees whole or not at all.
 *
 * Tokens never repeat, even after a power cut: commits are synced to disk
 * only at checkpoints by default (`sync=normal`), so the last ones can be
 * lost with the machine; but a revision is never handed out above the
 * `reserved` revision on disk, and the transaction that raises `reserved`
 * (by {@link RESERVE} at a time) is synced before it is answered. After a
 * reboot the file continues from `reserved`.
 *
 * @module
 */
import type { Check, CommitResult, Entry, Op } from '../../core/contract/adapter'
import { fromRow, rowPlace, type EventRow } from '../kit/rows'
import { hasRevisionLeft, nextRevision, toEntry, written, type Stored } from '../kit/write'
import { CLOCK_EVERY_MS, keyBytes, keyOf, type EntryRow, type OwnerRow, type Statements } from './schema'

/** A commit's failure answer. */
export type Failure = Extract<CommitResult, { ok: false }>
/** A commit's success answer. */
export type Success = Extract<CommitResult, { ok: true }>

/** Revisions reserved on disk at a time: one synced transaction per this many. */
export const RESERVE = 10_000

/** Thrown inside a transaction that must raise the reservation but was not going to be synced: run it again, synced. */
export class NeedsSyncError extends Error {}

/** The stored entry of a row (checked: a damaged row fails with the file, namespace and key named). */
export function storedOf(row: EntryRow, file: string, ns: string): Stored {
  const e = fromRow({ ...row, key: keyOf(row.k) }, rowPlace(file, ns, 'entry'))
  if (row.expires !== null) e.expiresAt = row.expires
  return e
}

/** One write transaction on namespace `ns`. */
export class Ledger {
  revision: number
  reserved: number
  compacted: number
  /** The namespace row's clock reading. */
  readonly clock: number
  readonly now: number
  /** Whether this transaction is synced to disk at commit. */
  readonly synced: boolean
  /** Keys changed in this transaction and not yet looked at for parked commits (parked.ts). */
  readonly changed = new Set<string>()
  readonly sql: Statements
  readonly ns: string
  readonly #file: string
  readonly #history: number
  /** Entries read since the last write. */
  readonly #read = new Map<string, Stored | undefined>()

  constructor(sql: Statements, ns: string, file: string, now: number, synced: boolean, history: number) {
    this.sql = sql
    this.ns = ns
    this.#file = file
    this.now = now
    this.synced = synced
    this.#history = history
    const row = sql.space.get(ns)!
    this.revision = row.revision
    this.reserved = row.reserved
    this.compacted = row.compacted
    this.clock = row.clock
  }

  /** The live entry at `key` (call after {@link expireDue}: nothing due is left). */
  entry(key: string): Stored | undefined {
    // Read once between writes: a handover judges every waiter's checks at the same few keys.
    if (this.#read.has(key)) return this.#read.get(key)
    const row = this.sql.entry.get(this.ns, keyBytes(key))
    const e = row ? storedOf(row, this.#file, this.ns) : undefined
    this.#read.set(key, e)
    return e
  }

  /** Ends every entry whose deadline has passed, each as an `expire` with a revision of its own. */
  expireDue(): void {
    for (const row of this.sql.due.all(this.ns, this.now)) this.#end(row.k)
  }

  /**
   * Ends what the registrations `gone` stood for: each is removed, and a
   * client left with no registration at all has its entries ended, as
   * expiries. A registration already removed (another process got there
   * first) changes nothing.
   */
  endRegistrations(gone: OwnerRow[]): void {
    for (const r of gone) {
      if (this.sql.unregister.run(this.ns, r.owner, r.nonce).changes === 0) continue
      // Its adapter is gone (or closed): its parked commits must never be applied.
      for (const row of this.sql.parkedOf.all(this.ns, r.nonce)) this.dropParked(row.id, (JSON.parse(row.plan) as { keys: string[] }).keys)
      if (this.sql.registrationsOf.get(this.ns, r.owner)!.n > 0) continue
      for (const row of this.sql.owned.all(this.ns, r.owner)) this.#end(row.k)
    }
  }

  /** Whether `check` holds now. */
  holds(check: Check): boolean {
    const e = this.entry(check.key)
    const want = 'revision' in check ? check.revision : check.created
    return want === (e === undefined ? null : 'revision' in check ? e.revision : e.created)
  }

  /** The failure answer of `checks` now (each check that fails, with its key's live entry), or undefined when all hold. */
  judge(checks: Check[]): Failure | undefined {
    let failed: Failure['failed'] | undefined
    for (const check of checks) {
      if (this.holds(check)) continue
      const e = this.entry(check.key)
      ;(failed ??= []).push({ key: check.key, entry: e && toEntry(e, this.now) })
    }
    return failed && { ok: false, failed }
  }

  /** Drops parked commit `id` (parked.ts), filed under `keys`. */
  dropParked(id: number, keys: string[]): void {
    for (const key of keys) this.sql.unparkKey.run(this.ns, keyBytes(key), id)
    this.sql.dropParked.run(id)
  }

  /** Applies a commit (see the adapter contract), in this transaction. */
  commit(checks: Check[], ops: Op[], requestId: string | undefined): CommitResult {
    return this.judge(checks) ?? this.apply(ops, requestId)
  }

  /** Applies the ops of a commit whose checks were judged to hold, with the next revision; throws before any write where an op cannot be applied. */
  apply(ops: Op[], requestId: string | undefined): Success {
    const revision = nextRevision(this.revision)
    const puts: Stored[] = []
    const deletes: string[] = []
    for (const op of ops) {
      const existing = this.entry(op.key)
      if (op.type === 'delete') {
        if (existing) deletes.push(op.key)
      } else puts.push(written(op, existing, revision, this.now))
    }
    const sql = this.sql
    let seq = 0
    // The request id on the commit's first event (a commit that changed nothing writes a `none` row for it).
    const id = () => (seq === 0 ? (requestId ?? null) : null)
    this.#read.clear()
    for (const key of deletes) {
      this.changed.add(key)
      sql.del.run(this.ns, keyBytes(key))
      sql.event.run(this.ns, revision, seq, 'delete', key, null, null, null, null, id()), seq++
    }
    for (const e of puts) {
      this.changed.add(e.key)
      const value = JSON.stringify(e.value)
      sql.put.run(this.ns, keyBytes(e.key), value, revision, e.created, e.owner ?? null, e.ttl ?? null, e.expiresAt ?? null)
      sql.event.run(this.ns, revision, seq, 'put', e.key, value, e.created, e.owner ?? null, e.ttl ?? null, id()), seq++
    }
    // Every revision has an event (the namespace's revision is the last one's): a `none` row for a commit that changed nothing.
    if (seq === 0) sql.event.run(this.ns, revision, 0, 'none', '', null, null, null, null, requestId ?? null)
    this.revision = revision
    return { ok: true, revision, entries: puts.map((e) => answered(e, this.now)), deleted: deletes }
  }

  /** The answer of the commit that made `revision` (a commit retried with its request id), from its events. */
  answer(revision: number): CommitResult {
    const out = { ok: true as const, revision, entries: [] as Entry[], deleted: [] as string[] }
    for (const row of this.sql.commitEvents.all(this.ns, revision)) {
      if (row.type === 'put') out.entries.push(eventEntry(row, this.#file, this.ns))
      else if (row.type !== 'none') out.deleted.push(row.key)
    }
    return out
  }

  /**
   * Brings the namespace's row up to date where it must be: a new
   * reservation when the revision passed the last one (only in a synced
   * transaction; else {@link NeedsSyncError}), the history pruned to its
   * size, a clock reading older than {@link CLOCK_EVERY_MS}. The revision
   * itself is the last event's: most commits leave the row alone, one page
   * fewer to write.
   */
  finish(): void {
    let changed = this.now - this.clock >= CLOCK_EVERY_MS
    if (this.revision > this.reserved) {
      if (!this.synced) throw new NeedsSyncError('the reservation must be raised in a synced transaction')
      this.reserved = this.revision + RESERVE
      changed = true
    }
    // Pruned a thousand revisions at a time, not at every commit (the last revision's events always stay).
    if (this.revision - this.compacted > this.#history + 1000) {
      this.compacted = this.revision - this.#history
      this.sql.prune.run(this.ns, this.compacted)
      changed = true
    }
    if (changed) this.sql.setSpace.run(this.revision, this.reserved, this.compacted, this.now, this.ns)
  }

  /** Deletes the entry of key bytes `k` as an expiry: a revision and an `expire` event of its own. */
  #end(k: Buffer): void {
    if (!hasRevisionLeft(this.revision)) return
    const revision = this.revision + 1
    this.#read.clear()
    this.sql.del.run(this.ns, k)
    const key = keyOf(k)
    this.sql.event.run(this.ns, revision, 0, 'expire', key, null, null, null, null, null)
    this.changed.add(key)
    this.revision = revision
  }
}

/**
 * A written entry as its commit answers it: its time left in whole
 * microseconds. This store's clock counts milliseconds since boot with a
 * fraction, and a deadline of `now + ttl` less `now` is not `ttl` in
 * floating point (60000.000000000015).
 */
function answered(e: Stored, now: number): Entry {
  const entry = toEntry(e, now)
  if (entry.ttl !== undefined) entry.ttl = Math.round(entry.ttl * 1_000) / 1_000
  return entry
}

/** The entry a put event wrote, as its commit's answer had it (with the TTL it was written with). */
function eventEntry(row: EventRow, file: string, ns: string): Entry {
  const e = fromRow({ key: row.key, value: row.value!, revision: row.revision, created: row.created!, owner: row.owner, ttl: row.ttl }, rowPlace(file, ns, `event of revision ${row.revision} for`))
  const out: Entry = { key: e.key, value: e.value, revision: e.revision, created: e.created }
  if (e.owner !== undefined) out.owner = e.owner
  if (e.ttl !== undefined) out.ttl = e.ttl
  return out
}
