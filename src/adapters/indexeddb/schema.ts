/**
 * The IndexedDB layout of a zaris store, one database per namespace:
 *
 * - `entries` (key path `key`): the live entries, with an index on
 *   `expiresAt` so the earliest deadline and everything due are one range read.
 * - `meta`: the store-wide `revision` under the key `revision`.
 * - `log` (key path `revision`): one record per revision with its events, the
 *   last `historySize` revisions only, so a watcher in any tab can replay
 *   from a revision and fill gaps left by out-of-order broadcasts.
 *
 * @module
 */
import { openDB, type DBSchema, type IDBPDatabase } from 'idb'
import type { Value, WatchEvent } from '../../core/adapter'

/** An entry as the store keeps it. `expiresAt` is wall-clock ms (Date.now scale), shared by all tabs. */
export interface StoredEntry {
  key: string
  value: Value
  revision: number
  created: number
  owner?: string
  ttl?: number
  expiresAt?: number
}

/** Everything one revision did: one record per revision, even one whose commit changed nothing. */
export interface LogRecord {
  revision: number
  events: WatchEvent[]
}

export interface ZarisDB extends DBSchema {
  entries: { key: string; value: StoredEntry; indexes: { expiresAt: number } }
  meta: { key: string; value: number }
  log: { key: number; value: LogRecord }
}

export type Database = IDBPDatabase<ZarisDB>

/** The IndexedDB database name of a namespace. */
export function databaseName(namespace: string): string {
  return `zaris:${namespace}`
}

/** Opens (creating on first use) the database of a namespace. */
export function openStore(namespace: string, onGone: () => void): Promise<Database> {
  return openDB<ZarisDB>(databaseName(namespace), 1, {
    upgrade(db) {
      db.createObjectStore('entries', { keyPath: 'key' }).createIndex('expiresAt', 'expiresAt')
      db.createObjectStore('meta')
      db.createObjectStore('log', { keyPath: 'revision' })
    },
    // Another tab deletes or upgrades the database: let it, and stop using ours.
    blocking() {
      onGone()
    },
    terminated() {
      onGone()
    },
  })
}

/**
 * The key range of every key that starts with `prefix` (code-unit order, as
 * IndexedDB compares strings), or undefined for "every key".
 */
export function prefixRange(prefix: string): IDBKeyRange | undefined {
  if (prefix === '') return undefined
  let end = prefix
  while (end.length > 0 && end.charCodeAt(end.length - 1) === 0xffff) end = end.slice(0, -1)
  if (end === '') return IDBKeyRange.lowerBound(prefix)
  const upper = end.slice(0, -1) + String.fromCharCode(end.charCodeAt(end.length - 1) + 1)
  return IDBKeyRange.bound(prefix, upper, false, true)
}
