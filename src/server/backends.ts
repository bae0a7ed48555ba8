/**
 * Where a node keeps its stores: in memory (the default) or in a SQLite file
 * (`--data`). A backend gives the handler one adapter per namespace and the
 * namespace's current revision (so watches can be resumed before their first event).
 *
 * @module
 */
import type { Adapter } from '../core/adapter'
import { systemClock, type Clock } from '../core/clock'
import { LocalStore, localAdapter } from '../adapters/shared/local-store'

/**
 * The stores behind a node.
 *
 * @example
 * const backend = memoryBackend()
 * const handler = createHandler({ adapterFor: backend.adapterFor, revisionOf: backend.revisionOf })
 */
export interface Backend {
  /** What `zaris serve` prints: `memory` or `sqlite <file>`. */
  readonly description: string
  adapterFor(namespace: string): Adapter
  revisionOf(namespace: string): number
  close(): Promise<void>
}

/**
 * Memory stores, one per namespace, living as long as the node process.
 *
 * @example
 * const backend = memoryBackend({ historySize: 1_000 })
 */
export function memoryBackend(options: { clock?: Clock; historySize?: number } = {}): Backend {
  const stores = new Map<string, LocalStore>()
  const storeOf = (ns: string) => {
    let s = stores.get(ns)
    if (!s) stores.set(ns, (s = new LocalStore({ clock: options.clock ?? systemClock, historySize: options.historySize })))
    return s
  }
  return {
    description: 'memory',
    adapterFor: (ns) => localAdapter('memory', storeOf(ns)),
    revisionOf: (ns) => storeOf(ns).revision,
    async close() {
      for (const s of stores.values()) s.close()
      stores.clear()
    },
  }
}

/**
 * Durable stores in one SQLite file (needs `better-sqlite3`).
 *
 * @example
 * const backend = await sqliteBackend('zaris.db')
 */
export async function sqliteBackend(file: string, options: { clock?: Clock; historySize?: number } = {}): Promise<Backend> {
  const { openSqlite } = await import('../adapters/sqlite')
  const db = await openSqlite(file, options)
  return {
    description: `sqlite ${file}`,
    adapterFor: (ns) => db.adapter(ns),
    revisionOf: (ns) => db.revision(ns),
    async close() {
      db.close()
    },
  }
}
