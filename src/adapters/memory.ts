/**
 * The memory adapter, `zaris://inproc/<namespace>`: one store per process,
 * clock and namespace. Two `connect` calls to the same URL share a store;
 * different namespaces never see each other. Nothing survives the process.
 *
 * @module
 */
import type { Adapter } from '../core/contract/adapter'
import { systemClock, type Clock } from '../core/time/clock'
import { checkKey, checkRequestId } from '../core/contract/validate'
import { answerOf, keepAnswer, type Answers } from './kit/answers'
import { LocalStore } from './kit/local-store'
import { localAdapter, type LocalBackend } from './kit/local-adapter'

/** Options of {@link memoryAdapter}. */
export interface MemoryAdapterOptions {
  /** Stores are shared per namespace within a process. Default `default`. */
  namespace?: string
  /** The clock TTLs run on. Stores are shared per clock too, so a test clock gets stores of its own. */
  clock?: Clock
  /** How many recent events are kept for watches that resume from a revision. Default 10 000. */
  historySize?: number
}

/** A namespace's store, and what its adapters use: the store, with commits sent again by request id answered. */
interface Kept {
  store: LocalStore
  backend: LocalBackend
}

const stores = new WeakMap<Clock, Map<string, Kept>>()

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
  let kept = byName.get(namespace)
  if (!kept) {
    const store = new LocalStore({ clock, historySize: options.historySize })
    kept = { store, backend: withRequestIds(store, new Map()) }
    byName.set(namespace, kept)
  }
  return localAdapter('memory', kept.backend)
}

/** `store`, with a commit sent again with its request id answered from `answers` (no transport retries here, but a caller may). */
function withRequestIds(store: LocalStore, answers: Answers): LocalBackend {
  return {
    get: (key) => store.get(key),
    list: (prefix, after, limit) => store.list(prefix, after, limit),
    history: (prefix, after, limits) => store.history(prefix, after, limits),
    commit(checks, ops, seen, requestId, park) {
      const kept = answerOf(answers, checkRequestId(requestId))
      if (kept) return kept
      const answer = store.commit(checks, ops, seen, requestId, park)
      // A parked commit is answered later (by the change that lets it through, or at its wait's end).
      if (answer instanceof Promise) return answer.then((a) => (keepAnswer(answers, requestId, a), a))
      keepAnswer(answers, requestId, answer)
      return answer
    },
    watch: (prefix, sink, fromRevision) => store.watch(prefix, sink, fromRevision),
    get granted() {
      return store.granted
    },
    get answersAtOnce() {
      return store.answersAtOnce
    },
  }
}
