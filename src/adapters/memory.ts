/**
 * The memory adapter, `zaris://inproc/<namespace>`: one store per process,
 * clock and namespace. Two `connect` calls to the same URL share a store;
 * different namespaces never see each other. Nothing survives the process.
 *
 * @module
 */
import type { Adapter } from '../core/contract/adapter'
import { systemClock, type Clock } from '../core/time/clock'
import { checkKey } from '../core/contract/validate'
import { LocalStore } from './kit/local-store'
import { localAdapter } from './kit/local-adapter'

/** Options of {@link memoryAdapter}. */
export interface MemoryAdapterOptions {
  /** Stores are shared per namespace within a process. Default `default`. */
  namespace?: string
  /** The clock TTLs run on. Stores are shared per clock too, so a test clock gets stores of its own. */
  clock?: Clock
  /** How many recent events are kept for watches that resume from a revision. Default 10 000. */
  historySize?: number
}

const stores = new WeakMap<Clock, Map<string, LocalStore>>()

/**
 * Creates an adapter on the process-wide memory store of a namespace.
 *
 * @example
 * import { Client } from 'zaris'
 * import { memoryAdapter } from 'zaris/memory'
 * const client = new Client(memoryAdapter({ namespace: 'jobs' }))
 */
export function memoryAdapter(options: MemoryAdapterOptions = {}): Adapter {
  const namespace = checkKey(options.namespace ?? 'default', 'namespace')
  const clock = options.clock ?? systemClock
  let byName = stores.get(clock)
  if (!byName) stores.set(clock, (byName = new Map()))
  let store = byName.get(namespace)
  if (!store) {
    store = new LocalStore({ clock, historySize: options.historySize })
    byName.set(namespace, store)
  }
  return localAdapter('memory', store)
}
