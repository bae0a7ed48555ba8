/**
 * The client's bookkeeping of a filtered stream (src/adapters/http/watch-filter.ts):
 * which set it asks for, and since when each prefix has been carried. Pure
 * logic, so driven directly; the end-to-end races are in filtered-stream.test.ts.
 */
import { expect, test } from 'vitest'
import { Coverage } from '../../src/adapters/http/watch-filter'
import { FILTER_MAX_CHARS, FILTER_MAX_PREFIXES } from '../../src/adapters/http/wire'

test('the target drops prefixes another covers, counts watches, and collapses to the common prefix past the node bounds', () => {
  const c = new Coverage()
  c.want('lock:b')
  c.want('lock:a')
  c.want('lock:a')
  c.want('lock:ab')
  expect(c.target()).toEqual(['lock:a', 'lock:b'])
  c.unwant('lock:a')
  expect(c.target()).toEqual(['lock:a', 'lock:b'])
  c.unwant('lock:a')
  expect(c.target()).toEqual(['lock:ab', 'lock:b'])
  for (let i = 0; i < FILTER_MAX_PREFIXES; i++) c.want(`lock:x${i}/`)
  expect(c.target()).toEqual(['lock:'])
  const d = new Coverage()
  d.want('q'.repeat(FILTER_MAX_CHARS / 2) + '1')
  d.want('q'.repeat(FILTER_MAX_CHARS / 2) + '2')
  expect(d.target()).toEqual(['q'.repeat(FILTER_MAX_CHARS / 2)])
  // Encoded for the URL, a set of non-ASCII keys is far longer than its characters: it collapses too.
  const e = new Coverage()
  for (let i = 0; i < 40; i++) e.want(`ключ/${i}/`.padEnd(60, 'ж'))
  expect(e.target()).toEqual(['ключ/'])
})

test('since: a prefix kept across sets keeps its start; a new one starts at the answer; one the set in flight drops is not carried', () => {
  const c = new Coverage()
  expect(c.since('a/1')).toBeUndefined()
  c.confirm(['a/'], 10)
  expect(c.since('a/1')).toBe(10)
  expect(c.since('b/')).toBeUndefined()
  c.confirm(['a/', 'b/'], 20)
  expect([c.since('a/1'), c.since('b/x')]).toEqual([10, 20])
  // Widened: keys under the new, wider prefix start now (conservative), narrowed ones keep theirs.
  c.confirm([''], 30)
  expect(c.since('c/')).toBe(30)
  c.confirm(['c/'], 40)
  expect(c.since('c/1')).toBe(30)
  // A request in flight that drops c/: a watch of c/ now must wait for the next set.
  c.inflight = ['d/']
  expect(c.since('c/1')).toBeUndefined()
  c.inflight = ['c/', 'd/']
  expect(c.since('c/1')).toBe(30)
  c.all = true
  expect(c.since('zzz')).toBe(-1)
})

test('stale: whether the set the watches need differs from the one carried or in flight', () => {
  const c = new Coverage()
  c.want('a/')
  expect(c.stale()).toBe(true)
  c.inflight = ['a/']
  expect(c.stale()).toBe(false)
  c.inflight = undefined
  c.confirm(['a/'], 1)
  expect(c.stale()).toBe(false)
  c.unwant('a/')
  expect(c.stale()).toBe(true)
})
