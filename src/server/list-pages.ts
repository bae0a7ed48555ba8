/**
 * `list` as the node serves it: one page of at most `maxEntries` entries and
 * `maxBytes` bytes of JSON, whatever the client asked for (etcd's range
 * `limit` and `more`). The page is read from the store in small chunks and
 * written out entry by entry, so building it holds a chunk of entries, not
 * the whole range; and at most `concurrency` pages are built at once, so
 * many clients listing together cost a bounded amount of memory.
 *
 * @module
 */
import type { Adapter } from '../core/adapter'

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

/** Builds list pages within the node's limits. */
export class ListPages {
  readonly #limits: PageLimits
  #running = 0
  readonly #waiting: Array<() => void> = []

  constructor(limits: PageLimits) {
    this.#limits = limits
  }

  /** The JSON text of one page of `adapter`'s entries under `prefix` after `after`. */
  async page(adapter: Adapter, prefix: string, after: string | undefined, limit: number | undefined): Promise<string> {
    await this.#turn()
    try {
      return await this.#build(adapter, prefix, after, Math.min(limit ?? Infinity, this.#limits.maxEntries))
    } finally {
      this.#done()
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

  #turn(): Promise<void> {
    if (this.#running < this.#limits.concurrency) {
      this.#running++
      return Promise.resolve()
    }
    return new Promise((resolve) => this.#waiting.push(resolve))
  }

  #done(): void {
    const next = this.#waiting.shift()
    // The next waiting page in a task of its own: a crowd of list requests takes turns with the node's other work.
    if (next) setTimeout(next, 0)
    else this.#running--
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
