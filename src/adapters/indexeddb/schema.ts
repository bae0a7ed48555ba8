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
import type { WatchEvent } from '../../core/contract/adapter'
import { openDatabase } from './request'

/** Everything one revision did: one record per revision, even one whose commit changed nothing. */
export interface LogRecord {
  revision: number
  events: WatchEvent[]
}

/** An open connection to a namespace's database: what the store's transactions begin on (see ./connection). */
export interface Database {
  transaction(stores: string | string[], mode?: IDBTransactionMode, options?: IDBTransactionOptions): IDBTransaction
}

/** The IndexedDB database name of a namespace. */
export function databaseName(namespace: string): string {
  return `zaris:${namespace}`
}

/** The schema version; see the module comment for what changed. */
const VERSION = 2

/** How many commits may pass between two trims of the log (each trim is a range delete). */
export const TRIM_EVERY = 64

/** Opens (creating or upgrading on first use) the database of a namespace. */
export function openStore(namespace: string, onGone: () => void): Promise<IDBDatabase> {
  return openDatabase(databaseName(namespace), VERSION, upgrade, onGone)
}

function upgrade(db: IDBDatabase, oldVersion: number, tx: IDBTransaction): void {
  if (oldVersion < 1) {
    db.createObjectStore('entries', { keyPath: 'key' }).createIndex('expiresAt', 'expiresAt')
    db.createObjectStore('log', { keyPath: 'revision' })
    return
  }
  if (oldVersion < 2) {
    // Version 1 wrote the revision to `meta` and its record to the log together; keep it in the log even so.
    const log = tx.objectStore('log')
    const meta = tx.objectStore('meta').get('revision')
    meta.onsuccess = () => {
      const last = log.openKeyCursor(null, 'prev')
      last.onsuccess = () => {
        const revision = meta.result as number | undefined
        const cursor = last.result
        if (revision !== undefined && (cursor === null || (cursor.key as number) < revision)) log.put({ revision, events: [] })
        db.deleteObjectStore('meta')
      }
    }
  }
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
