/**
 * Remembers recent commits by client request id, so that a commit whose
 * answer was lost and that the client sends again gets the original answer
 * instead of being applied a second time (which could grant a second lock or
 * add twice to a counter). A retry that arrives while the original is still
 * running waits for it.
 *
 * Bounded three ways: entry count, total size of the remembered answers and
 * age. An id older than that is forgotten; clients retry within seconds. The
 * cache is per node and per process: a durable store (the SQLite store)
 * additionally keeps ids with its commits, so a retry after a restart is
 * recognised too.
 *
 * @module
 */

import { InvalidArgumentError } from '../core/contract/errors'

/** Bounds of a {@link ReplayCache}. */
export interface ReplayCacheOptions {
  /** Most ids remembered. Default 10 000. */
  maxEntries?: number
  /** Most bytes of remembered answers. Default 16 MiB. */
  maxBytes?: number
  /** How long an id is remembered, in ms. Default 10 minutes. */
  ttlMs?: number
  /** The clock ids age on (ms). Default `Date.now`. */
  now?: () => number
}

interface Slot {
  id: string
  /** A hash of the request the answer is for: a retry with another request under the same id is refused. */
  print: number
  answer: Promise<string>
  at: number
  bytes: number
}

/**
 * A bounded map from request id to the serialized answer of its commit.
 *
 * @example
 * const cache = new ReplayCache()
 * const body = await cache.run(`${ns}:${requestId}`, requestText, async () => JSON.stringify(await adapter.commit(checks, ops)))
 */
export class ReplayCache {
  readonly #maxEntries: number
  readonly #maxBytes: number
  readonly #ttlMs: number
  readonly #now: () => number
  #slots = new Map<string, Slot>()
  /**
   * The slots in insertion order, oldest at `#head`: pruning walks this, not
   * the map, whose iteration after many deletions at its front skips every
   * deleted entry (V8 keeps them until it rehashes) and cost more than the
   * commit itself once the cache was full.
   */
  #order: Slot[] = []
  #head = 0
  #bytes = 0

  constructor(options: ReplayCacheOptions = {}) {
    this.#maxEntries = options.maxEntries ?? 10_000
    this.#maxBytes = options.maxBytes ?? 16 * 1024 * 1024
    this.#ttlMs = options.ttlMs ?? 10 * 60_000
    this.#now = options.now ?? Date.now
  }

  get size(): number {
    return this.#slots.size
  }

  /**
   * The answer remembered for `id`, or the answer of `apply()`, remembered.
   * `replayed` says which. `request` is the request's text: a retry whose
   * request differs is refused with INVALID_ARGUMENT (it is not a retry, and
   * the old answer would be for another commit). A failed `apply` is not
   * remembered: its retry runs again. `request` may be given as a function:
   * a fresh id's is then read only after `apply()` started (a release's
   * store step, and the handover in it, come first).
   */
  async run(id: string, request: string | (() => string), apply: () => Promise<string>): Promise<{ body: string; replayed: boolean }> {
    this.#prune()
    const text = typeof request === 'string' ? () => request : request
    const slot = this.#slots.get(id)
    if (slot) {
      if (slot.print !== fingerprint(text())) {
        throw new InvalidArgumentError(`requestId: already used for another commit; a retry must send the same checks and ops (use a new id for a new commit)`)
      }
      return { body: await slot.answer, replayed: true }
    }
    const answer = apply()
    const fresh: Slot = { id, print: fingerprint(text()), answer, at: this.#now(), bytes: 0 }
    this.#slots.set(id, fresh)
    this.#order.push(fresh)
    try {
      const body = await answer
      if (this.#slots.get(id) === fresh) {
        fresh.bytes = body.length * 2
        this.#bytes += fresh.bytes
        this.#prune()
      }
      return { body, replayed: false }
    } catch (err) {
      if (this.#slots.get(id) === fresh) this.#slots.delete(id)
      throw err
    }
  }

  #prune(): void {
    const oldest = this.#now() - this.#ttlMs
    const order = this.#order
    while (this.#head < order.length) {
      const slot = order[this.#head]!
      // A slot whose commit failed left the map already; it only leaves the queue here.
      const live = this.#slots.get(slot.id) === slot
      if (live && slot.at > oldest && this.#slots.size <= this.#maxEntries && this.#bytes <= this.#maxBytes) break
      this.#head++
      if (live) {
        this.#slots.delete(slot.id)
        this.#bytes -= slot.bytes
      }
    }
    // Drop the consumed front now and then, so the queue stays the size of the cache.
    if (this.#head > 1024 && this.#head * 2 > order.length) {
      this.#order = order.slice(this.#head)
      this.#head = 0
    }
  }
}

/** FNV-1a over the UTF-16 code units of `text`, as a 32-bit number: enough to tell a retry from another request. */
function fingerprint(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}
