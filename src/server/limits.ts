/**
 * A node's memory budget and how it is shared out (Redis's `maxmemory`,
 * etcd's `--quota-backend-bytes`): every store, log, buffer and cache the
 * node keeps for its clients has a byte limit, and by default those limits
 * are shares of one budget, so that together they cannot pass it. Each can
 * be set on its own (`zaris serve` flags, or the options of the backends,
 * `createHandler` and `listen`); docs/operations.md lists them all.
 *
 * ```
 * stores' entries (memory, SQLite)        1/4   --max-store-bytes
 * watch history, all namespaces           1/8   --max-history-bytes (8 MiB at most per namespace)
 * unread answers, all connections         1/4   --max-output-bytes
 * requests being read or in flight        1/4   --max-input-bytes
 * request ids remembered for retries      1/16  (the replay cache)
 * list pages being built (4 at a time)    the rest, about 1/16
 * ```
 *
 * What the budget does not cover is the runtime's own memory (Node, the
 * code, V8's spare heap) and each open namespace's empty structures (about
 * 2 KB), which is why the process's resident size runs above it.
 *
 * @module
 */

/** The default memory budget of a node: fits a machine with 1 GiB. */
export const DEFAULT_MAX_MEMORY = 256 * 1024 * 1024

/** The byte limits a memory budget gives. */
export interface MemoryShares {
  /** The budget itself. */
  maxMemory: number
  /** The entries of the memory or SQLite stores, all namespaces. */
  maxStoreBytes: number
  /** The watch history kept, all namespaces. */
  maxHistoryBytes: number
  /** The watch history kept for one namespace. */
  historyBytesPerNamespace: number
  /** Unread answers, all connections. */
  maxOutputBytes: number
  /** Requests being read or in flight, all connections. */
  maxInputBytes: number
  /** Answers of commits remembered by request id. */
  replayCacheBytes: number
}

/**
 * The limits that share `maxMemory` out.
 *
 * @example
 * const shares = memoryShares(512 * 1024 * 1024) // { maxStoreBytes: 128 MiB, ... }
 */
export function memoryShares(maxMemory = DEFAULT_MAX_MEMORY): MemoryShares {
  const maxHistoryBytes = Math.floor(maxMemory / 8)
  return {
    maxMemory,
    maxStoreBytes: Math.floor(maxMemory / 4),
    maxHistoryBytes,
    historyBytesPerNamespace: Math.min(8 * 1024 * 1024, maxHistoryBytes),
    maxOutputBytes: Math.floor(maxMemory / 4),
    maxInputBytes: Math.floor(maxMemory / 4),
    replayCacheBytes: Math.floor(maxMemory / 16),
  }
}
