/**
 * The namespaces a node has opened: one adapter each, opened on first use
 * and kept until the node closes, at most `maxNamespaces` of them (any
 * request opens its namespace, so without a cap an open node could be made
 * to hold any number of stores).
 *
 * @module
 */
import type { Adapter } from '../core/contract/adapter'
import { InvalidArgumentError, RateLimitedError } from '../core/contract/errors'
import { countHolds } from '../core/lock-query'
import { NAMESPACE_PATTERN } from './protocol'

/** The open namespaces of one node. */
export class Namespaces {
  readonly #open: (namespace: string) => Adapter | Promise<Adapter>
  readonly #max: number
  readonly #adapters = new Map<string, Promise<Adapter>>()
  /** The adapters whose opening finished: a request finds its own without waiting a microtask. */
  readonly #opened = new Map<string, Adapter>()

  constructor(open: (namespace: string) => Adapter | Promise<Adapter>, max: number) {
    this.#open = open
    this.#max = max
  }

  /** How many are open. */
  get size(): number {
    return this.#adapters.size
  }

  /** The adapter of `ns`, opened now if need be; past the cap, RATE_LIMITED. */
  adapterOf(ns: string): Promise<Adapter> {
    let a = this.#adapters.get(ns)
    if (!a) {
      if (this.#adapters.size >= this.#max) {
        return Promise.reject(new RateLimitedError(`this node serves at most ${this.#max} namespaces and has that many open; namespace ${JSON.stringify(ns)} was not opened (zaris serve --max-namespaces)`))
      }
      const opening = Promise.resolve().then(() => this.#open(ns))
      opening.then(
        (adapter) => {
          if (this.#adapters.get(ns) === opening) this.#opened.set(ns, adapter)
        },
        () => this.#adapters.delete(ns),
      )
      this.#adapters.set(ns, (a = opening))
    }
    return a
  }

  /** The adapter of `ns` if it is open already, at once (a commit then reaches its store in the same step as its frame). */
  opened(ns: string): Adapter | undefined {
    return this.#opened.get(ns)
  }

  /**
   * The holds of locks, leases and candidacies across every namespace, as
   * `locks.query()` counts them (core/lock-query.ts): zaris's own entries
   * (wait lines, shared holds' groups, intents, permits) are not counted as
   * locks; a lock held shared counts each live holder.
   */
  async locksHeld(): Promise<number> {
    let n = 0
    for (const a of this.#adapters.values()) {
      try {
        n += await countHolds(await a)
      } catch {
        // A namespace that cannot answer is not counted.
      }
    }
    return n
  }

  /** Closes every adapter opened; the node is done with them. */
  async closeAll(): Promise<void> {
    const opened = [...this.#adapters.values()]
    this.#adapters.clear()
    this.#opened.clear()
    await Promise.allSettled(opened.map(async (a) => (await a).close()))
  }
}

/** The namespace of a route's path segment, checked. */
export function namespaceOf(segment: string): string {
  const ns = decodeURIComponentSafe(segment)
  if (!NAMESPACE_PATTERN.test(ns)) {
    throw new InvalidArgumentError('namespace: may use only letters, digits and . _ ~ - (1-128 characters)')
  }
  return ns
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}
