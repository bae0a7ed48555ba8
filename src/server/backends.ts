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
import type { StorePosition } from './handler'

/**
 * The stores behind a node.
 *
 * @example
 * const backend = memoryBackend()
 * const handler = createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf })
 */
export interface Backend {
  /** What `zaris serve` prints: `memory` or `sqlite <file>`. */
  readonly description: string
  adapterFor(namespace: string): Adapter
  positionOf(namespace: string): StorePosition
  close(): Promise<void>
}

/**
 * Memory stores, one per namespace, living as long as the node process.
 *
 * @example
 * const backend = memoryBackend({ historySize: 1_000 })
 */
export function memoryBackend(options: { clock?: Clock; historySize?: number } = {}): Backend {
  const stores = new Map<string, { store: LocalStore; epoch: string }>()
  const storeOf = (ns: string) => {
    let s = stores.get(ns)
    if (!s) stores.set(ns, (s = { store: new LocalStore({ clock: options.clock ?? systemClock, historySize: options.historySize }), epoch: newEpoch() }))
    return s
  }
  return {
    description: 'memory',
    adapterFor: (ns) => localAdapter('memory', storeOf(ns).store),
    positionOf: (ns) => {
      const s = storeOf(ns)
      return { revision: s.store.revision, epoch: s.epoch }
    },
    async close() {
      for (const s of stores.values()) s.store.close()
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
    positionOf: (ns) => db.position(ns),
    async close() {
      db.close()
    },
  }
}

/** A random id for one life of a store. */
export function newEpoch(): string {
  const bytes = new Uint8Array(9)
  globalThis.crypto.getRandomValues(bytes)
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}
