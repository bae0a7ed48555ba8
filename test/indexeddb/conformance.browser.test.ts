/**
 * The conformance suite, unchanged, against the IndexedDB adapter in real
 * Chromium. Every client and raw adapter gets its own connection and
 * BroadcastChannel, as separate tabs would.
 */
import { indexedDbAdapter } from 'zaris/indexeddb'
import { testAdapter } from '../conformance'

testAdapter('indexeddb', (namespace) => indexedDbAdapter({ namespace }), {
  cleanup: (namespace) =>
    new Promise<void>((resolve) => {
      const r = indexedDB.deleteDatabase(`zaris:${namespace}`)
      r.onsuccess = r.onerror = r.onblocked = () => resolve()
    }),
})
