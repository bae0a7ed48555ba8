/**
 * Where a node keeps its stores: in memory (the default), in a SQLite file
 * (`--data`), or in a Redis, an etcd cluster or a Postgres database that
 * several nodes share (`--redis`, `--etcd`, `--postgres`). A backend gives the handler one adapter per namespace and the
 * namespace's current revision (so watches can be resumed before their first event).
 *
 * @module
 */
import type { Adapter } from '../core/contract/adapter'
import { systemClock, type Clock } from '../core/time/clock'
import { randomHex } from '../core/contract/ids'
import { LogBudget } from '../adapters/kit/event-log'
import { LocalStore, StoreQuota } from '../adapters/kit/local-store'
import { localAdapter } from '../adapters/kit/local-adapter'
import { memoryShares } from './limits'
import type { StorePosition } from './options'

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
  /** The adapter of a namespace's store (for `createHandler`). */
  adapterFor(namespace: string): Adapter | Promise<Adapter>
  /** The revision and epoch of a namespace's store (for `createHandler`). */
  positionOf(namespace: string): StorePosition | Promise<StorePosition>
  /** Bytes its stores hold in this process (none for Redis, which holds them itself). */
  usage?(): { storeBytes: number; historyBytes: number }
  /** Closes every store. */
  close(): Promise<void>
}

/** Byte limits of the stores a node keeps in its own memory (memory and SQLite backends); defaults are shares of the default memory budget (see limits.ts). */
export interface StoreLimits {
  /** Recent events kept per namespace for watch replays. Default 10 000. */
  historySize?: number
  /** Most bytes of recent events kept per namespace. Default 8 MiB. */
  historyBytes?: number
  /** Most bytes of recent events kept, all namespaces. Default 32 MiB. */
  maxHistoryBytes?: number
  /** Most bytes of entries, all namespaces; a commit that would pass it gets TOO_LARGE. Default 64 MiB. */
  maxStoreBytes?: number
}

/** The shared budgets of a backend's stores. */
function budgets(options: StoreLimits) {
  const shares = memoryShares()
  return {
    historySize: options.historySize,
    historyBytes: options.historyBytes ?? shares.historyBytesPerNamespace,
    historyBudget: new LogBudget(options.maxHistoryBytes ?? shares.maxHistoryBytes),
    quota: new StoreQuota(options.maxStoreBytes ?? shares.maxStoreBytes),
  }
}

/**
 * Memory stores, one per namespace, living as long as the node process.
 *
 * @example
 * const backend = memoryBackend({ historySize: 1_000 })
 */
export function memoryBackend(options: StoreLimits & { clock?: Clock } = {}): Backend {
  const stores = new Map<string, { store: LocalStore; epoch: string }>()
  const shared = budgets(options)
  const storeOf = (ns: string) => {
    let s = stores.get(ns)
    if (!s) stores.set(ns, (s = { store: new LocalStore({ clock: options.clock ?? systemClock, ...shared }), epoch: newEpoch() }))
    return s
  }
  return {
    description: 'memory',
    usage: () => ({ storeBytes: shared.quota.used, historyBytes: shared.historyBudget.used }),
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
export async function sqliteBackend(file: string, options: StoreLimits & { clock?: Clock } = {}): Promise<Backend> {
  const { openSqlite } = await import('../adapters/sqlite')
  const shared = budgets(options)
  const db = await openSqlite(file, { clock: options.clock, ...shared })
  return {
    description: `sqlite ${file}`,
    usage: () => ({ storeBytes: shared.quota.used, historyBytes: shared.historyBudget.used }),
    adapterFor: (ns) => db.adapter(ns),
    positionOf: (ns) => db.position(ns),
    async close() {
      db.close()
    },
  }
}

/**
 * Stores in a shared Redis (needs `ioredis`): the node keeps no state of its
 * own, so several nodes on one Redis serve one store.
 *
 * @example
 * const backend = await redisBackend('redis://127.0.0.1:6379/0')
 */
export async function redisBackend(url: string): Promise<Backend> {
  const { redisAdapter } = await import('../adapters/redis')
  const { redact } = await import('../adapters/redis/connection')
  return sharedBackend(`redis ${redact(url)}`, (ns) => redisAdapter({ url, namespace: ns }))
}

/**
 * Stores in an etcd cluster (needs `etcd3`): the node keeps no state of its
 * own, so several nodes on one cluster serve one store. The URL names the
 * members; its namespace, if any, is ignored (each request names its own).
 *
 * @example
 * const backend = await etcdBackend('etcd://127.0.0.1:2379,127.0.0.1:22379')
 */
export async function etcdBackend(url: string): Promise<Backend> {
  const { etcdAdapter, parseEtcdUrl, redact } = await import('../adapters/etcd')
  const members = url.replace(/^(etcds?:\/\/[^/?#]*).*$/i, '$1') + '/zaris-node'
  const { hosts, auth } = parseEtcdUrl(members)
  return sharedBackend(`etcd ${redact(members)}`, (ns) => etcdAdapter({ hosts, auth, namespace: ns }))
}

/**
 * Stores in a Postgres database (needs `pg`): the node keeps no state of its
 * own, so several nodes on one database serve one store, and the locks are
 * the ones applications reach with `postgres://` and fence in their own
 * transactions. The URL's `ns`, if any, is ignored (each request names its
 * namespace); its `schema` is kept.
 *
 * @example
 * const backend = await postgresBackend('postgres://zaris@127.0.0.1:5432/app')
 */
export async function postgresBackend(url: string): Promise<Backend> {
  const { postgresAdapter, redact } = await import('../adapters/postgres')
  return sharedBackend(`postgres ${redact(url)}`, (ns) => postgresAdapter({ url, namespace: ns }))
}

/** One adapter per namespace, opened on first use, all in front of one shared store. */
async function sharedBackend<A extends Adapter & { position(): Promise<StorePosition> }>(description: string, open: (ns: string) => Promise<A>): Promise<Backend> {
  const adapters = new Map<string, Promise<A>>()
  const adapterOf = (ns: string) => {
    let a = adapters.get(ns)
    if (!a) {
      a = open(ns)
      a.catch(() => adapters.delete(ns))
      adapters.set(ns, a)
    }
    return a
  }
  // Fail at start, not at the first request, when the store cannot be reached.
  await (await open('zaris-node-probe')).close()
  return {
    description,
    adapterFor: (ns) => adapterOf(ns),
    positionOf: async (ns) => (await adapterOf(ns)).position(),
    async close() {
      const all = [...adapters.values()]
      adapters.clear()
      await Promise.allSettled(all.map(async (a) => (await a).close()))
    },
  }
}

/** A random id for one life of a store. */
export function newEpoch(): string {
  return randomHex(9)
}
