/**
 * The keys of a local store in sorted order (UTF-16 code units, as
 * JavaScript compares strings), for `list` pages: a binary search finds a
 * page's first key. New keys wait unsorted until a page is read, and are then
 * sorted and merged in, so a write never pays for the order.
 *
 * @module
 */

/** Sorted keys, with the keys added since the last read merged in lazily. */
export class KeyIndex {
  #sorted: string[] = []
  #unsorted: string[] = []

  /** A key the index does not hold yet. */
  add(key: string): void {
    this.#unsorted.push(key)
  }

  /** Keeps only the keys `keep` says to (the store dropped the others). */
  retain(keep: (key: string) => boolean): void {
    this.#sorted = this.#sorted.filter(keep)
    this.#unsorted = this.#unsorted.filter(keep)
  }

  /** Every key, sorted: the keys added since the last call are sorted and merged in. */
  sorted(): readonly string[] {
    if (this.#unsorted.length === 0) return this.#sorted
    const added = this.#unsorted.sort(byKey)
    this.#unsorted = []
    const old = this.#sorted
    if (old.length === 0) return (this.#sorted = added)
    const merged = new Array<string>(old.length + added.length)
    let a = 0
    let b = 0
    for (let k = 0; k < merged.length; k++) merged[k] = b >= added.length || (a < old.length && old[a]! < added[b]!) ? old[a++]! : added[b++]!
    return (this.#sorted = merged)
  }

  /** Where a page under `prefix` after `after` starts in {@link sorted}. */
  start(prefix: string, after: string | undefined): number {
    const sorted = this.sorted()
    return after !== undefined && after >= prefix ? firstAbove(sorted, after) : firstAtLeast(sorted, prefix)
  }
}

/** UTF-16 code unit order, as JavaScript compares strings. */
function byKey(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** The index of the first key >= `key` in `sorted`. */
function firstAtLeast(sorted: readonly string[], key: string): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (sorted[mid]! < key) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The index of the first key > `key` in `sorted`. */
function firstAbove(sorted: readonly string[], key: string): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (sorted[mid]! <= key) lo = mid + 1
    else hi = mid
  }
  return lo
}
