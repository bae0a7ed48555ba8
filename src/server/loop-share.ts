/**
 * The event loop's turns, shared between accepting connections and the
 * node's heavy work (building `list` pages).
 *
 * Node accepts one connection per turn of its event loop (libuv since 1.45,
 * libuv/libuv#3696; Node 20 on). A crowd of connections that arrives at once
 * waits in the kernel's accept queue, and a fresh client that comes in behind
 * it waits for as many turns as there are connections ahead of it. Every
 * turn that also builds a page of up to 1 MiB adds that page's time to the
 * wait of each of them: under the hostile load of RELIABILITY.md (820
 * attacking sockets, framed connections asking for 1 MiB pages they never
 * read), the node accepted some 40 connections a second, one per page, and
 * a fresh client waited 1-4 s to be accepted while the loop never stalled.
 *
 * So while connections are being accepted, a page waits, after the last one,
 * {@link GAP_FACTOR} times as long as that one took to build (at most
 * {@link MAX_GAP_MS}): the turns in between are short ones that accept.
 * Building a page took about as long as writing it out, so accepting gets
 * some 60% of the loop and pages the rest (with half each, a fresh client
 * behind 400 attacking connections still waited 0.4-1.2 s at load 6); with
 * no connection arriving nothing waits.
 *
 * The loop belongs to the process, so the count of accepted connections is
 * the process's, whichever listener accepted them.
 *
 * @module
 */

/** Connections accepted by any listener of this process. */
let accepted = 0

/** How many times as long as it took, a piece of work leaves the loop to connections being accepted. */
export const GAP_FACTOR = 3

/** The longest a page waits for connections being accepted. */
export const MAX_GAP_MS = 100

/** Counts a connection the loop accepted (the listeners call this for each, refused ones too). */
export function noteAccepted(): void {
  accepted++
}

/** Paces one kind of heavy work against the connections being accepted. */
export class Pacer {
  /** The count of accepted connections when last asked. */
  #seen = accepted
  /** While connections arrive, the next piece of work waits until then (performance.now() ms). */
  #next = 0

  /** True if heavy work may begin now: no connection was accepted since the last time asked, or the work has left the loop to them long enough. */
  mayRun(now = performance.now()): boolean {
    const accepting = accepted !== this.#seen
    this.#seen = accepted
    return !accepting || now >= this.#next
  }

  /** A piece of work that began at `startedAt` is done: the loop goes to accepting for a while, if connections are arriving. */
  ran(startedAt: number, now = performance.now()): void {
    this.#next = now + Math.min(GAP_FACTOR * (now - startedAt), MAX_GAP_MS)
  }
}
