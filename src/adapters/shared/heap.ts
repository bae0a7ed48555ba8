/**
 * A binary min-heap ordered by `at`: the memory and SQLite stores keep their
 * expiry deadlines in one, so finding what is due costs O(log n) per entry
 * instead of a sweep over every key.
 *
 * @module
 */
export interface Due {
  at: number
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
    let i = items.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (items[parent]!.at <= item.at) break
      items[i] = items[parent]!
      i = parent
    }
    items[i] = item
  }

  pop(): T | undefined {
    const items = this.#items
    const top = items[0]
    const last = items.pop()
    if (items.length === 0 || last === undefined) return top
    this.#siftDown(last, 0)
    return top
  }

  /**
   * Keeps only the items `keep` accepts, in O(n): for a store that leaves
   * stale items in the heap and drops them in bulk rather than one by one.
   */
  retain(keep: (item: T) => boolean): void {
    const items = this.#items.filter(keep)
    this.#items = items
    // Floyd's heap construction: sift down every parent, last first.
    for (let i = (items.length >> 1) - 1; i >= 0; i--) this.#siftDown(items[i]!, i)
  }

  /** Places `item` at or below slot `i`, moving smaller children up. */
  #siftDown(item: T, i: number): void {
    const items = this.#items
    for (;;) {
      const left = 2 * i + 1
      if (left >= items.length) break
      const right = left + 1
      const child = right < items.length && items[right]!.at < items[left]!.at ? right : left
      if (items[child]!.at >= item.at) break
      items[i] = items[child]!
      i = child
    }
    items[i] = item
  }
}
