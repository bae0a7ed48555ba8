/**
 * The bytes of requests a node is reading or answering, all connections
 * together: HTTP bodies while they are read and served, and what framed
 * requests in flight reserve. Framed connections stop being read while it
 * is spent (TCP holds their senders back) and go on as it frees; an HTTP
 * body that finds it spent is refused with 503, which clients retry.
 *
 * Framed connections wait once three quarters of it are taken: the last
 * quarter is kept for HTTP bodies, which cannot wait. Under the hostile load
 * of RELIABILITY.md, 20 framed connections that never read reserved 1 MiB
 * for each `list` in flight, 80 MiB together, and a fresh client's 200-byte
 * commit over HTTP was refused 503 for want of room.
 *
 * @module
 */

/** A node-wide byte budget for requests in progress. */
export class InputBudget {
  /** Bytes in use now. */
  used = 0
  readonly #waiting = new Set<() => void>()

  /** What framed connections may take before they wait. */
  readonly #framedBytes: number

  constructor(readonly maxBytes: number) {
    this.#framedBytes = Math.floor((maxBytes * 3) / 4)
  }

  /** True while framed connections may take more (some of the budget beyond their share is kept for HTTP bodies). */
  get open(): boolean {
    return this.used < this.#framedBytes
  }

  /** Takes `bytes` if they fit (or nothing else is in use, so one request always can); false otherwise. */
  tryTake(bytes: number): boolean {
    if (this.used > 0 && this.used + bytes > this.maxBytes) return false
    this.used += bytes
    return true
  }

  /** Takes `bytes` whether or not they fit (a request already read). */
  take(bytes: number): void {
    this.used += bytes
  }

  /** Gives `bytes` back, and wakes whoever waits for room. */
  give(bytes: number): void {
    this.used -= bytes
    if (this.#waiting.size === 0 || !this.open) return
    const waiting = [...this.#waiting]
    this.#waiting.clear()
    for (const wake of waiting) wake()
  }

  /** Calls `wake` (once) when some of the budget is given back. */
  waitForRoom(wake: () => void): void {
    this.#waiting.add(wake)
  }

  /** Stops waking `wake`. */
  forget(wake: () => void): void {
    this.#waiting.delete(wake)
  }
}
