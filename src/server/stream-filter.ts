/**
 * The prefixes a filtered watch stream follows: the node writes a change to
 * the stream only if its key starts with one of them, so a client that
 * watches a few keys parses the events of those keys, not of the namespace.
 *
 * The set is the client's to send (in the stream's query, then by `POST
 * filter` as its watches come and go) and the node's to bound: at most
 * {@link FILTER_MAX_PREFIXES} prefixes and {@link FILTER_MAX_CHARS} code
 * units in all, else `TooLargeError`. A prefix that another in the set
 * already covers is dropped, so matching costs one `startsWith` per prefix
 * that counts.
 *
 * @module
 */
import { InvalidArgumentError, TooLargeError } from '../core/contract/errors'
import { FILTER_MAX_CHARS, FILTER_MAX_PREFIXES, filterPrefixes, parseWith } from './protocol'
import { commonPrefix } from '../adapters/http/wire'

/** A bounded set of key prefixes. */
export class PrefixFilter {
  readonly prefixes: readonly string[]

  /** Checks `prefixes` (bounds: TooLargeError) and keeps those no other covers. */
  constructor(prefixes: readonly string[]) {
    checkCount(prefixes)
    let chars = 0
    for (const p of prefixes) chars += p.length
    if (chars > FILTER_MAX_CHARS) {
      throw new TooLargeError(`a watch stream's prefixes hold at most ${FILTER_MAX_CHARS} characters in all, got ${chars}`)
    }
    const sorted = [...new Set(prefixes)].sort()
    const kept: string[] = []
    // Sorted, a prefix comes right before the keys (and prefixes) it covers.
    for (const p of sorted) if (kept.length === 0 || !p.startsWith(kept[kept.length - 1]!)) kept.push(p)
    this.prefixes = kept
  }

  /** True if the stream carries changes of `key`. */
  match(key: string): boolean {
    const ps = this.prefixes
    for (let i = 0; i < ps.length; i++) if (key.startsWith(ps[i]!)) return true
    return false
  }

  /** The longest prefix of every prefix in the set: what a history read for the set may narrow to. */
  common(): string {
    return commonPrefix(this.prefixes)
  }
}

/**
 * Too many prefixes is `TooLargeError` however many: checked before the
 * set's schema, which would call a long array malformed (and read it all).
 */
export function checkCount(prefixes: unknown): void {
  if (Array.isArray(prefixes) && prefixes.length > FILTER_MAX_PREFIXES) {
    throw new TooLargeError(`a watch stream follows at most ${FILTER_MAX_PREFIXES} prefixes, got ${prefixes.length}; follow a shorter common prefix`)
  }
}

/** The prefixes of a stream's query: `prefixes` as JSON text of an array of prefixes. */
export function filterOfQuery(text: string): PrefixFilter {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new InvalidArgumentError('prefixes: must be a JSON array of prefixes')
  }
  checkCount(json)
  return new PrefixFilter(parseWith(filterPrefixes, json, 'prefixes'))
}
