/**
 * The few IndexedDB calls the adapter needs, on the raw API: a promise for a
 * lone read, and opening a database. Transactions that read then write chain
 * request callbacks themselves (see ./transactions): a promise between two
 * requests costs a microtask turn each, and anything that is not an
 * IndexedDB request can let the transaction commit half way.
 *
 * @module
 */

/** The result of one request (a read in a transaction of its own), as a promise. */
export function settled<T>(start: () => IDBRequest<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    // `start` may throw (the connection is closing): that is a rejection too.
    const req = start()
    req.onsuccess = () => resolve(req.result)
    req.onerror = () => reject(req.error)
  })
}

/** What {@link openDatabase} calls when the database must be created or upgraded. */
export type Upgrade = (db: IDBDatabase, oldVersion: number, tx: IDBTransaction) => void

/**
 * Opens `name` at `version`, running `upgrade` in the versionchange
 * transaction when needed. `onGone` runs when another tab wants to delete or
 * upgrade the database (versionchange: the caller should close ours) and when
 * the browser closes the connection itself.
 */
export function openDatabase(name: string, version: number, upgrade: Upgrade, onGone: () => void): Promise<IDBDatabase> {
  return new Promise<IDBDatabase>((resolve, reject) => {
    const open = indexedDB.open(name, version)
    open.onupgradeneeded = (ev) => upgrade(open.result, ev.oldVersion, open.transaction!)
    open.onerror = () => reject(open.error)
    open.onsuccess = () => {
      const db = open.result
      db.onversionchange = () => onGone()
      db.onclose = () => onGone()
      resolve(db)
    }
  })
}
