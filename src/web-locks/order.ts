/**
 * The order of one manager's requests, as the Web Locks API keeps it in its
 * one lock task queue: what can be kept of it over a store that many
 * clients share.
 *
 * - **One name**: a request starts (makes its first try, or joins the
 *   store's line) only once the manager's previous request for that name
 *   has reached the store — granted, standing in line, or ended — so that
 *   requests made one after the other stand in line in that order, and a
 *   later one never goes ahead of an earlier one that waits.
 * - **All names**: a request's callback runs (and an `ifAvailable` miss
 *   calls back with `null`) only once every earlier request of the manager
 *   had its turn — its callback called, it settled, or it waits in line —
 *   so grants of different names reach their callbacks in the order the
 *   requests were made, and `query()` sees every earlier request.
 *
 * - **Release**: a lock is released only once every request made before
 *   its callback settled had its turn, as the specification's queue runs
 *   the release after them: a request for its name made meanwhile waits in
 *   line for it, and one for another name is granted before it is released.
 *
 * Across clients, the store's line decides (zaris's wait line, respected by
 * every request of the facade).
 *
 * @module
 */

/** One request's place in its manager's order. */
export interface Turn {
  /** Resolves when the request may start: the previous request for its name reached the store. */
  readonly mayStart: Promise<void>
  /** The request reached the store (granted, in line, or ended): the next request for its name may start. */
  reached(): void
  /** Resolves when every earlier request of the manager had its turn. */
  readonly mayGo: Promise<void>
  /** The request had its turn (its callback was called, it settled, or it waits in line). */
  done(): void
}

/** The order of one manager's requests; see the module doc. */
export class Order {
  #tail: Promise<void> = Promise.resolve()
  /** For each name with a request on its way to the store: when the latest one reaches it. */
  readonly #names = new Map<string, Promise<void>>()

  /** A new request for `name`, after every request made so far. */
  enter(name: string): Turn {
    const mayStart = this.#names.get(name) ?? Promise.resolve()
    const [reachedNow, reached] = signalled()
    // Only after the previous one: `reached` may be called before the request starts (an abort).
    const reachedInOrder = Promise.all([mayStart, reachedNow]).then(() => {})
    this.#names.set(name, reachedInOrder)
    void reachedInOrder.then(() => {
      if (this.#names.get(name) === reachedInOrder) this.#names.delete(name)
    })
    const mayGo = this.#tail
    const [doneNow, done] = signalled()
    this.#tail = Promise.all([mayGo, doneNow]).then(() => {})
    return { mayStart, reached, mayGo, done }
  }

  /** Resolves once every request made so far had its turn. */
  settled(): Promise<void> {
    return this.#tail
  }
}

function signalled(): [Promise<void>, () => void] {
  let fire!: () => void
  const promise = new Promise<void>((resolve) => (fire = resolve))
  return [promise, fire]
}
