/**
 * The IndexedDB layout of a zaris store, one database per namespace:
 *
 * - `entries` (key path `key`): the live entries, with an index on
 *   `expiresAt` so the earliest deadline and everything due are one range read.
 * - `log` (key path `revision`): one record per revision with its events, the
 *   last `historySize` revisions (and up to {@link TRIM_EVERY} more), so a
 *   watcher in any tab can replay from a revision and fill gaps left by
 *   out-of-order broadcasts. Its last key is the store-wide revision: the log
 *   always keeps the latest record, so a commit touches two object stores.
 *
 * Version 1 also kept the revision in a `meta` store; the upgrade to 2 makes
 * sure the log holds it and drops `meta`. The version bump also shuts out tabs
 * still running version-1 code, which would read a revision nobody updates.
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
  log: { key: number; value: LogRecord }
}

export type Database = IDBPDatabase<ZarisDB>

/** The IndexedDB database name of a namespace. */
export function databaseName(namespace: string): string {
  return `zaris:${namespace}`
}

/** The schema version; see the module comment for what changed. */
const VERSION = 2

/** How many commits may pass between two trims of the log (each trim is a range delete). */
export const TRIM_EVERY = 64

/** Opens (creating or upgrading on first use) the database of a namespace. */
export function openStore(namespace: string, onGone: () => void): Promise<Database> {
  return openDB<ZarisDB>(databaseName(namespace), VERSION, {
    async upgrade(db, oldVersion, _newVersion, tx) {
      if (oldVersion < 1) {
        db.createObjectStore('entries', { keyPath: 'key' }).createIndex('expiresAt', 'expiresAt')
        db.createObjectStore('log', { keyPath: 'revision' })
        return
      }
      if (oldVersion < 2) {
        // Version 1 wrote the revision to `meta` and its record to the log together; keep it in the log even so.
        const v1 = tx as unknown as { objectStore(name: string): { get(key: string): Promise<unknown> } }
        const revision = (await v1.objectStore('meta').get('revision')) as number | undefined
        const last = await tx.objectStore('log').openKeyCursor(null, 'prev')
        if (revision !== undefined && (last === null || (last.key as number) < revision)) {
          await tx.objectStore('log').put({ revision, events: [] })
        }
        ;(db as unknown as IDBDatabase).deleteObjectStore('meta')
      }
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
