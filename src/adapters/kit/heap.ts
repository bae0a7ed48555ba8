/**
 * A binary min-heap ordered by `at`, where each item knows its own slot: the
 * memory and SQLite stores keep their expiry deadlines in one, so finding
 * what is due costs O(log n) per entry instead of a sweep over every key, and
 * a deleted or rewritten entry leaves the heap at once (no stale items to
 * pile up and outlive the garbage collector's young generation).
 *
 * @module
 */
export interface Due {
  at: number
  /** Orders items of the same `at` (lower first; absent counts as 0): a store's parked commits of one order, by when they came. */
  readonly tie?: number
  /** The item's slot in the heap, -1 when it is not in one; only the heap writes it. */
  heapIndex: number
}

/** Whether `a` comes before `b`. */
function before(a: Due, b: Due): boolean {
  return a.at < b.at || (a.at === b.at && (a.tie ?? 0) < (b.tie ?? 0))
}

export class MinHeap<T extends Due> {
  #items: T[] = []

  get size(): number {
    return this.#items.length
  }

  peek(): T | undefined {
    return this.#items[0]
  }

  push(item: T): void {
    const items = this.#items
    items.push(item)
    this.#siftUp(item, items.length - 1)
  }

  pop(): T | undefined {
    const top = this.#items[0]
    if (top !== undefined) this.remove(top)
    return top
  }

  /** Takes `item` out; harmless if it is not in the heap. */
  remove(item: T): void {
    const i = item.heapIndex
    const items = this.#items
    if (i < 0 || items[i] !== item) return
    item.heapIndex = -1
    const last = items.pop()!
    if (i === items.length) return
    // The last item fills the hole, then moves whichever way its deadline says.
    if (i > 0 && before(last, items[(i - 1) >> 1]!)) this.#siftUp(last, i)
    else this.#siftDown(last, i)
  }

  /** Puts `item` in, or moves it after its `at` changed. */
  update(item: T): void {
    const i = item.heapIndex
    if (i < 0 || this.#items[i] !== item) return this.push(item)
    if (i > 0 && before(item, this.#items[(i - 1) >> 1]!)) this.#siftUp(item, i)
    else this.#siftDown(item, i)
  }

  #siftUp(item: T, i: number): void {
    const items = this.#items
    while (i > 0) {
      const parent = (i - 1) >> 1
      const p = items[parent]!
      if (!before(item, p)) break
      items[i] = p
      p.heapIndex = i
      i = parent
    }
    items[i] = item
    item.heapIndex = i
  }

  #siftDown(item: T, i: number): void {
    const items = this.#items
    for (;;) {
      const left = 2 * i + 1
      if (left >= items.length) break
      const right = left + 1
      const child = right < items.length && before(items[right]!, items[left]!) ? right : left
      const c = items[child]!
      if (!before(c, item)) break
      items[i] = c
      c.heapIndex = i
      i = child
    }
    items[i] = item
    item.heapIndex = i
  }
}
