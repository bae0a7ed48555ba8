/**
 * A namespace's state read back from the file: the entries as of the last
 * checkpoint, the events after it replayed over them, and the request ids
 * still remembered. Every entry with a TTL gets the whole TTL it was last
 * written with again, counted from the load.
 *
 * @module
 */
import type { CommitResult } from '../../core/contract/adapter'
import type { Clock } from '../../core/time/clock'
import { randomHex } from '../../core/contract/ids'
import type { LocalStore } from '../kit/local-store'
import type { Stored } from '../kit/write'
import type { GatedSink, Group } from './group'
import { fromRow, rowPlace, type Statements } from './schema'

/**
 * A commit remembered by its request id. Its answer is rebuilt from its
 * events when asked (they are kept while it is remembered), so memory holds
 * no values for it.
 */
export interface Remembered {
  revision: number
  at: number
  /** The group it was written in. */
  group?: Group
  /** The answer as a schema 1 file stored it. */
  legacy?: string
}

/** A namespace loaded from the file, and what the store keeps beside it. */
export interface Loaded {
  store: LocalStore
  clock: FreezableClock
  epoch: string
  /** The revision the entries table reflects. */
  checkpoint: number
  /** Entries changed since the checkpoint (null: deleted), written at the next one. */
  dirty: Map<string, Stored | null>
  /** Request ids, oldest first. */
  requests: Map<string, Remembered>
  sinks: Set<GatedSink>
}

/** What {@link readNamespace} reads: the parts of {@link Loaded} that come from the file. */
export type FromFile = Pick<Loaded, 'epoch' | 'checkpoint' | 'dirty' | 'requests'> & {
  /** The namespace's revision: the last event's. */
  revision: number
  entries: Map<string, Stored>
  /** True when the namespace was new: its row was just inserted. */
  created: boolean
}

/**
 * Reads a namespace of `file` (creating its row if the file has none), with
 * TTLs restarting at `now` and request ids younger than `requestTtlMs`. A
 * malformed row fails the read with INTERNAL naming the file, the namespace,
 * the row and its key.
 */
export function readNamespace(sql: Statements, file: string, namespace: string, now: number, requestTtlMs: number): FromFile {
  let row = sql.storeRow.get(namespace)
  const created = row === undefined
  if (!row) {
    row = { revision: 0, epoch: randomHex(9) }
    sql.createStore.run(namespace, row.epoch)
  }
  const checkpoint = row.revision
  const entries = new Map<string, Stored>()
  for (const r of sql.entries.all(namespace)) entries.set(r.key, fromRow(r, rowPlace(file, namespace, 'entry')))
  const dirty = new Map<string, Stored | null>()
  const requests = new Map<string, Remembered>()
  const since = Date.now() - requestTtlMs
  if (sql.legacyRequests) {
    for (const r of sql.legacyRequests.all(namespace, since)) {
      const result = JSON.parse(r.result) as CommitResult
      requests.set(r.id, { revision: result.ok ? result.revision : 0, at: r.at, legacy: r.result })
    }
  }
  for (const r of sql.requests.iterate(namespace, since)) requests.set(r.id, { revision: r.revision, at: r.at })
  // Replay the events after the checkpoint.
  let revision = checkpoint
  for (const e of sql.replay.iterate(namespace, checkpoint)) {
    revision = e.revision
    if (e.type === 'none') continue
    const put = e.type === 'put' ? fromRow({ ...e, value: e.value!, created: e.created! }, rowPlace(file, namespace, `event of revision ${e.revision} for`)) : undefined
    if (put) entries.set(e.key, put)
    else entries.delete(e.key)
    dirty.set(e.key, put ?? null)
  }
  for (const e of entries.values()) if (e.ttl !== undefined) e.expiresAt = now + e.ttl // the whole TTL again, from the restart
  return { epoch: row.epoch, checkpoint, dirty, requests, revision, entries, created }
}

/** A clock that can stand still for the length of one synchronous commit. */
export class FreezableClock implements Clock {
  readonly #base: Clock
  #frozen: number | undefined
  constructor(base: Clock) {
    this.#base = base
  }
  now(): number {
    return this.#frozen ?? this.#base.now()
  }
  setTimeout(fn: () => void, ms: number) {
    return this.#base.setTimeout(fn, ms)
  }
  clearTimeout(handle: Parameters<Clock['clearTimeout']>[0]): void {
    this.#base.clearTimeout(handle)
  }
  freeze(): void {
    this.#frozen = this.#base.now()
  }
  thaw(): void {
    this.#frozen = undefined
  }
}
