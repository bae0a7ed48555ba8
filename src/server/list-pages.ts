/**
 * `list` as the node serves it: one page of at most `maxEntries` entries and
 * `maxBytes` bytes of JSON, whatever the client asked for (etcd's range
 * `limit` and `more`). The page is read from the store in small chunks and
 * written out entry by entry, so building it holds a chunk of entries, not
 * the whole range; and at most `concurrency` pages are built at once, so
 * many clients listing together cost a bounded amount of memory.
 *
 * And in time: at most one page is begun per turn of the event loop, and
 * while connections are being accepted, a page waits after the last one as
 * long as that one took (`./loop-share`). Over the memory store a page is
 * built without a pause (its reads resolve at once), and a page answered on
 * a framed connection let that connection ask for the next: pages begun as
 * soon as a slot freed ran back to back in one turn, and the loop accepted
 * no connection and read no other request meanwhile (measured: one turn of
 * 3-6 s, some 150 pages of 1 MiB for 20 framed connections that never read,
 * while a fresh client waited to be accepted; RELIABILITY.md, hostile load).
 *
 * @module
 */
import type { Adapter } from '../core/contract/adapter'
import { Pacer } from './loop-share'

/** Entries read from the store at a time while a page is built (at most 64 x the largest entry held). */
const CHUNK = 64
const NON_ASCII = /[^\x00-\x7f]/

/** Room kept in a page for its envelope: `{"entries":[`, `],"more":false}`. */
const ENVELOPE = 32

/** Limits of the pages one node serves. */
export interface PageLimits {
  /** Most entries in one page. */
  maxEntries: number
  /** Most bytes of one page's JSON (at least one entry always goes, to make progress). */
  maxBytes: number
  /** Most pages being built at once; the next wait their turn. */
  concurrency: number
}

/** Runs `fn` in a later turn of the event loop (after the I/O now ready), as soon as it can. */
const laterTurn: (fn: () => void) => void = typeof setImmediate === 'function' ? (fn) => void setImmediate(fn) : (fn) => void setTimeout(fn, 0)

/** Builds list pages within the node's limits. */
export class ListPages {
  readonly #limits: PageLimits
  readonly #pacer = new Pacer()
  #running = 0
  readonly #waiting: Array<() => void> = []
  /** A page was begun (or put off) in this turn of the loop: the next one waits for a later turn. */
  #turnUsed = false

  constructor(limits: PageLimits) {
    this.#limits = limits
  }

  /** Pages being built now, and pages waiting for their turn (for tests). */
  get counts(): { running: number; waiting: number } {
    return { running: this.#running, waiting: this.#waiting.length }
  }

  /** The JSON text of one page of `adapter`'s entries under `prefix` after `after`. */
  async page(adapter: Adapter, prefix: string, after: string | undefined, limit: number | undefined): Promise<string> {
    await this.#turn()
    const started = performance.now()
    try {
      return await this.#build(adapter, prefix, after, Math.min(limit ?? Infinity, this.#limits.maxEntries))
    } finally {
      this.#pacer.ran(started)
      this.#running--
      this.#next()
    }
  }

  async #build(adapter: Adapter, prefix: string, after: string | undefined, limit: number): Promise<string> {
    const budget = this.#limits.maxBytes - ENVELOPE
    const parts: string[] = []
    let bytes = 0
    let from = after
    for (;;) {
      const chunk = await adapter.list(prefix, { after: from, limit: Math.min(CHUNK, limit - parts.length) })
      for (const [i, entry] of chunk.entries.entries()) {
        const part = JSON.stringify(entry)
        const size = utf8Length(part) + 1
        if (parts.length > 0 && bytes + size > budget) return envelope(parts, true)
        parts.push(part)
        bytes += size
        // The page is full: more follow if this chunk had more, or the store said so.
        if (parts.length === limit) return envelope(parts, i < chunk.entries.length - 1 || chunk.more)
      }
      const last = chunk.entries.at(-1)
      if (!chunk.more || last === undefined) return envelope(parts, false)
      from = last.key
    }
  }

  /** Resolves when this page may begin: a slot is free, no page began in this turn, and connections being accepted have had their share. */
  #turn(): Promise<void> {
    if (this.#waiting.length === 0 && this.#mayBegin()) {
      this.#begin()
      return Promise.resolve()
    }
    const turn = new Promise<void>((resolve) => this.#waiting.push(resolve))
    this.#useTurn()
    return turn
  }

  #mayBegin(): boolean {
    return this.#running < this.#limits.concurrency && !this.#turnUsed && this.#pacer.mayRun()
  }

  #begin(): void {
    this.#running++
    this.#useTurn()
  }

  /** No other page begins in this turn; the next waiting one is looked at in the next. */
  #useTurn(): void {
    if (this.#turnUsed) return
    this.#turnUsed = true
    laterTurn(() => {
      this.#turnUsed = false
      this.#next()
    })
  }

  /** Begins the first waiting page if it may begin now; otherwise looks again in a later turn (or when a slot frees). */
  #next(): void {
    if (this.#waiting.length === 0) return
    if (!this.#mayBegin()) {
      // Put off for the connections being accepted: look again next turn. A full house or a used turn already has a look coming.
      if (this.#running < this.#limits.concurrency) this.#useTurn()
      return
    }
    this.#begin()
    this.#waiting.shift()!()
  }
}

function envelope(parts: string[], more: boolean): string {
  return `{"entries":[${parts.join(',')}],"more":${more}}`
}

/** The UTF-8 length of `text` without encoding it (its length, for ASCII, found by one native scan). */
export function utf8Length(text: string): number {
  if (!NON_ASCII.test(text)) return text.length
  let n = text.length
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) continue
    if (c < 0x800) n += 1
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      // A surrogate pair: 4 bytes for 2 units.
      n += 2
      i++
    } else n += 2
  }
  return n
}
