/**
 * The public shapes of the SQLite store: its options and the file's stores.
 *
 * @module
 */
import type { Adapter } from '../../core/contract/adapter'
import type { Clock } from '../../core/time/clock'
import type { LogBudget } from '../kit/event-log'
import type { StoreQuota } from '../kit/local-store'

/** Options of `openSqlite`. */
export interface SqliteOptions {
  /** The clock TTLs run on. Default: the system's monotonic clock. */
  clock?: Clock
  /** Recent events kept per namespace for watch replays. Default 10 000. */
  historySize?: number
  /** Most bytes of recent events kept in memory per namespace, and a budget the namespaces share (see event-log.ts). */
  historyBytes?: number
  historyBudget?: LogBudget
  /** Most bytes of entries, shared with other stores: a commit that would pass it gets TOO_LARGE. */
  quota?: StoreQuota
  /** How long a commit's request id is remembered, in ms. Default 10 minutes. */
  requestTtlMs?: number
  /** Most request ids remembered per namespace. Default 100 000. */
  maxRequests?: number
  /**
   * @internal Called just before a group's transaction is committed; a throw
   * fails the group as a failed disk write would (for tests).
   */
  beforeSync?: () => void
}

/**
 * A SQLite file holding the stores of any number of namespaces.
 *
 * @example
 * const db = await openSqlite('zaris.db')
 * const client = new Client(db.adapter('demo'))
 */
export interface SqliteStores {
  /** The file. */
  readonly file: string
  /** An adapter on the namespace's store (loaded from the file on first use). */
  adapter(namespace: string): Adapter
  /** The namespace's current revision, and the epoch that names this file's store of it. */
  position(namespace: string): { revision: number; epoch: string }
  /** Writes what is pending, stops expiry timers, ends watches and closes the file. */
  close(): void
}
