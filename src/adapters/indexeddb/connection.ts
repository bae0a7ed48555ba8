/**
 * One page's connection to a namespace's database, and the rule that keeps a
 * frozen page from stalling every other tab.
 *
 * A frozen page (Chrome's memory and energy savers, mobile browsers, the
 * DevTools Protocol's `Page.setWebLifecycleState`) gets no IndexedDB results
 * and runs no timers, yet still runs BroadcastChannel handlers and the
 * microtasks they queue. A transaction it has open then stays open for the
 * whole freeze, and IndexedDB keeps every other tab's readwrite transactions
 * on the same stores behind it: one idle tab that heard another tab's commit
 * could stop every write of the origin for as long as it stays frozen. So:
 *
 * - the page's `freeze` event aborts every transaction the page has open
 *   ({@link Connection.abortOpen}): an aborted transaction wrote nothing, and
 *   its caller runs it again once the page runs (`SharedStore.run`);
 * - while frozen, no transaction starts: work that a message starts (a watch
 *   catching up, a waiter's take, the reaper's end of a closed tab's entries)
 *   waits for `resume`.
 *
 * A page that hangs inside its own transaction (a long synchronous loop
 * between two requests, a debugger) still holds it: no event tells it.
 *
 * @module
 */
import type { Database } from './schema'

export class Connection implements Database {
  readonly #db: IDBDatabase
  /** The transactions begun here that have not completed or aborted yet. */
  readonly #open = new Set<IDBTransaction>()

  constructor(db: IDBDatabase) {
    this.#db = db
  }

  transaction(stores: string | string[], mode?: IDBTransactionMode, options?: IDBTransactionOptions): IDBTransaction {
    const tx = this.#db.transaction(stores, mode, options)
    const open = this.#open
    open.add(tx)
    const done = () => open.delete(tx)
    tx.addEventListener('complete', done)
    tx.addEventListener('abort', done)
    return tx
  }

  /**
   * Aborts every transaction still open, so that none holds up another tab's
   * writes while this page cannot finish it. One that is already committing
   * cannot be aborted, and needs nothing from the page to finish.
   */
  abortOpen(): void {
    for (const tx of this.#open) {
      try {
        tx.abort()
      } catch {
        // Finished or committing: it releases its stores without us.
      }
    }
    this.#open.clear()
  }

  close(): void {
    this.#db.close()
  }
}
