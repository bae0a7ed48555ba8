/**
 * The expiry heap of the in-process stores: pops come out in deadline order,
 * also after items were taken out or moved from anywhere in the heap (a
 * deleted or rewritten entry leaves it at once).
 */
import { describe, expect, test } from 'vitest'
import { MinHeap } from '../../src/adapters/kit/heap'

/** mulberry32: a seeded generator, so a failure replays. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Item {
  at: number
  heapIndex: number
  id: number
}
const item = (id: number, at: number): Item => ({ id, at, heapIndex: -1 })

function drain(heap: MinHeap<Item>): number[] {
  const out: number[] = []
  for (let i = heap.pop(); i !== undefined; i = heap.pop()) {
    expect(i.heapIndex).toBe(-1)
    out.push(i.at)
  }
  return out
}

describe('MinHeap', () => {
  test('pops in deadline order, with duplicates', () => {
    const rand = random(1)
    const heap = new MinHeap<Item>()
    const ats = Array.from({ length: 2000 }, () => Math.floor(rand() * 500))
    ats.forEach((at, id) => heap.push(item(id, at)))
    expect(heap.size).toBe(2000)
    expect(drain(heap)).toEqual([...ats].sort((a, b) => a - b))
    expect(heap.size).toBe(0)
    expect(heap.peek()).toBeUndefined()
  })

  test('random pushes, removals, moves and pops agree with a sorted model', () => {
    const rand = random(2)
    for (const n of [1, 2, 3, 7, 100, 500]) {
      const heap = new MinHeap<Item>()
      const items = Array.from({ length: n }, (_, id) => item(id, 0))
      const inHeap = new Set<Item>()
      for (let step = 0; step < n * 10; step++) {
        const it = items[Math.floor(rand() * n)]!
        const r = rand()
        if (r < 0.4) {
          it.at = Math.floor(rand() * 1000)
          heap.update(it) // in: a push; already in: a move up or down
          inHeap.add(it)
        } else if (r < 0.7) {
          heap.remove(it)
          heap.remove(it) // twice is harmless
          inHeap.delete(it)
          expect(it.heapIndex).toBe(-1)
        } else if (r < 0.8) {
          const min = inHeap.size === 0 ? undefined : Math.min(...[...inHeap].map((i) => i.at))
          const top = heap.pop()
          expect(top?.at).toBe(min)
          if (top) inHeap.delete(top)
        }
        expect(heap.size).toBe(inHeap.size)
        expect(heap.peek()?.at).toBe(inHeap.size === 0 ? undefined : Math.min(...[...inHeap].map((i) => i.at)))
      }
      expect(drain(heap)).toEqual([...inHeap].map((i) => i.at).sort((a, b) => a - b))
    }
  })

  test('an item pushed to one heap is not taken out of another by mistake', () => {
    const a = new MinHeap<Item>()
    const b = new MinHeap<Item>()
    const x = item(1, 5)
    a.push(item(0, 1))
    a.push(x)
    b.remove(x) // x is not in b: nothing happens to either
    expect(a.size).toBe(2)
    expect(drain(a)).toEqual([1, 5])
  })
})
