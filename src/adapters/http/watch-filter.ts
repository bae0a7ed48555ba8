/**
 * Which prefixes the adapter's watch stream should carry, and since when it
 * has carried each: the bookkeeping behind a filtered stream (see
 * `./watch-hub`). Pure: the hub does the requests.
 *
 * - `want`/`unwant` count the prefixes the watches name; `target()` is the
 *   set to send: the prefixes no other covers, or, past the node's bounds
 *   ({@link FILTER_MAX_PREFIXES}, {@link FILTER_MAX_CHARS}), their common
 *   prefix (a wider stream, never a refused one).
 * - `confirm(set, revision)` records that the node carries `set` from after
 *   `revision` on; a prefix that a prefix of the previous set covered keeps
 *   its earlier start (the stream carried it all along).
 * - `since(prefix)`: the revision after which the stream has carried every
 *   change under `prefix`, or undefined if it does not (yet), or if the set
 *   in flight would stop carrying it.
 *
 * @module
 */
import { commonPrefix, FILTER_MAX_CHARS, FILTER_MAX_PREFIXES } from './wire'

/** Characters of the set, URL-encoded, past which it collapses (a node's request line and headers fit in 16 KiB). */
const MAX_QUERY = 8 * 1024

interface Member {
  readonly prefix: string
  readonly since: number
}

/** The filter state of one stream. */
export class Coverage {
  /** The stream carries the whole namespace (a node that does not filter): every prefix since its start. */
  all = false
  /** The last version sent. */
  version = 0
  /** The set sent and not yet answered. */
  inflight: readonly string[] | undefined
  readonly #wanted = new Map<string, number>()
  #confirmed: Member[] = []

  want(prefix: string): void {
    this.#wanted.set(prefix, (this.#wanted.get(prefix) ?? 0) + 1)
  }

  unwant(prefix: string): void {
    const n = this.#wanted.get(prefix) ?? 0
    if (n <= 1) this.#wanted.delete(prefix)
    else this.#wanted.set(prefix, n - 1)
  }

  /** The set the stream should carry now. */
  target(): string[] {
    const kept = cover([...this.#wanted.keys()])
    let chars = 0
    for (const p of kept) chars += p.length
    // The set also rides in the stream's URL on a reconnect: encoded, it must fit a request line.
    if (kept.length <= FILTER_MAX_PREFIXES && chars <= FILTER_MAX_CHARS && encodeURIComponent(JSON.stringify(kept)).length <= MAX_QUERY) return kept
    return [commonPrefix(kept)]
  }

  /** True if the target differs from what the node carries (or is about to). */
  stale(): boolean {
    const now = this.inflight ?? this.#confirmed.map((m) => m.prefix)
    const target = this.target()
    return target.length !== now.length || target.some((p, i) => p !== now[i])
  }

  confirm(set: readonly string[], revision: number): void {
    const old = this.#confirmed
    this.#confirmed = set.map((prefix) => ({ prefix, since: old.find((m) => prefix.startsWith(m.prefix))?.since ?? revision }))
  }

  since(prefix: string): number | undefined {
    if (this.all) return -1
    const member = this.#confirmed.find((m) => prefix.startsWith(m.prefix))
    if (!member) return undefined
    if (this.inflight && !this.inflight.some((p) => prefix.startsWith(p))) return undefined
    return member.since
  }
}

/** Sorted, without the prefixes another one covers. */
function cover(prefixes: string[]): string[] {
  const kept: string[] = []
  for (const p of prefixes.sort()) if (kept.length === 0 || !p.startsWith(kept[kept.length - 1]!)) kept.push(p)
  return kept
}
