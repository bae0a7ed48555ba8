/**
 * The conformance suite, unchanged, against the IndexedDB adapter in real
 * Chromium. Every client and raw adapter gets its own connection and
 * BroadcastChannel, as separate tabs would.
 */
import { Client, type Adapter } from 'zaris'
import { indexedDbAdapter } from 'zaris/indexeddb'
import { runConformance } from '../conformance'

let n = 0
runConformance('indexeddb', async () => {
  const namespace = `conformance-${++n}-${Math.random().toString(36).slice(2)}`
  const opened: Array<Client | Adapter> = []
  return {
    async connect(options) {
      const client = new Client(indexedDbAdapter({ namespace }), options)
      opened.push(client)
      return client
    },
    async adapter() {
      const adapter = indexedDbAdapter({ namespace })
      opened.push(adapter)
      return adapter
    },
    async close() {
      await Promise.all(opened.map((o) => o.close()))
      await new Promise<void>((resolve) => {
        const r = indexedDB.deleteDatabase(`zaris:${namespace}`)
        r.onsuccess = r.onerror = r.onblocked = () => resolve()
      })
    },
  }
})
