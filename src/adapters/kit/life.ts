/**
 * An adapter's life: open until `close()`, then every call fails with
 * `ClosedError` and every watch it opened has ended — while the store under
 * it may live on for other adapters.
 *
 * @module
 */
import type { Unsubscribe } from '../../core/contract/adapter'
import { ClosedError } from '../../core/contract/errors'

/**
 * The closed flag and the watches to end, for one adapter named `name`.
 *
 * @example
 * const life = new AdapterLife('memory')
 * life.assertOpen()
 * return life.track(await store.watch(prefix, sink))
 */
export class AdapterLife {
  readonly #name: string
  readonly #watches = new Set<Unsubscribe>()
  #closed = false

  constructor(name: string) {
    this.#name = name
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#closed
  }

  /** Throws `ClosedError` once the adapter is closed. */
  assertOpen(): void {
    if (this.#closed) throw new ClosedError(`the ${this.#name} adapter is closed`)
  }

  /**
   * Takes a watch just opened: it ends when the adapter closes, or when the
   * returned function is called (once; again is harmless). A watch whose
   * opening the close overtook is ended at once, and the call fails with
   * `ClosedError`.
   */
  track(unsubscribe: Unsubscribe): Unsubscribe {
    if (this.#closed) {
      unsubscribe()
      this.assertOpen()
    }
    const tracked = () => {
      if (this.#watches.delete(tracked)) unsubscribe()
    }
    this.#watches.add(tracked)
    return tracked
  }

  /** Marks the adapter closed and ends its watches; false when it already was (close twice is harmless). */
  close(): boolean {
    if (this.#closed) return false
    this.#closed = true
    for (const end of [...this.#watches]) end()
    return true
  }
}
