/**
 * The expiry heap of the in-process stores: pops come out in deadline order,
 * also after `retain` dropped items in bulk (the store's stale-item compaction).
 */
import { describe, expect, test } from 'vitest'
import { MinHeap } from '../../src/adapters/shared/heap'

/** mulberry32: a seeded generator, so a failure replays. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function drain(heap: MinHeap<{ at: number; id: number }>): number[] {
  const out: number[] = []
  for (let item = heap.pop(); item !== undefined; item = heap.pop()) out.push(item.at)
  return out
}

describe('MinHeap', () => {
  test('pops in deadline order, with duplicates', () => {
    const rand = random(1)
    const heap = new MinHeap<{ at: number; id: number }>()
    const ats = Array.from({ length: 2000 }, () => Math.floor(rand() * 500))
    ats.forEach((at, id) => heap.push({ at, id }))
    expect(heap.size).toBe(2000)
    expect(drain(heap)).toEqual([...ats].sort((a, b) => a - b))
    expect(heap.size).toBe(0)
    expect(heap.peek()).toBeUndefined()
  })

  test('retain keeps exactly the accepted items and the heap order, for many sizes', () => {
    const rand = random(2)
    for (const n of [0, 1, 2, 3, 7, 100, 1000, 5000]) {
      const heap = new MinHeap<{ at: number; id: number }>()
      const items = Array.from({ length: n }, (_, id) => ({ at: Math.floor(rand() * 10_000), id }))
      for (const item of items) heap.push(item)
      // Pop a few first so the array is not in insertion order.
      const popped = new Set<number>()
      for (let i = 0; i < n / 10; i++) popped.add(heap.pop()!.id)
      const keep = (item: { id: number }) => item.id % 3 !== 0
      heap.retain(keep)
      const want = items.filter((item) => !popped.has(item.id) && keep(item)).map((item) => item.at).sort((a, b) => a - b)
      expect(heap.size).toBe(want.length)
      // Pushes after a retain still land in order.
      heap.push({ at: -1, id: -1 })
      heap.push({ at: 5_000, id: -2 })
      expect(drain(heap)).toEqual([-1, ...want, 5_000].sort((a, b) => a - b))
    }
  })

  test('retain of items pushed in descending order (the worst case for the array layout) restores the order', () => {
    const heap = new MinHeap<{ at: number; id: number }>()
    for (let i = 3000; i > 0; i--) heap.push({ at: i, id: i })
    heap.retain((item) => item.id % 2 === 0)
    expect(drain(heap)).toEqual(Array.from({ length: 1500 }, (_, i) => 2 * (i + 1)))
  })
})
