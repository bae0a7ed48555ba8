/**
 * The node's wait and hold histograms from the commits it serves
 * (src/server/hold-metrics.ts), on a clock of the test's: how each end is
 * told apart, that an expiry is counted at the scrape after the TTL, and
 * that what it follows is bounded.
 */
import { expect, test } from 'vitest'
import type { CommitResult, Entry, Op } from 'zaris'
import { HoldMetrics, MAX_TRACKED } from '../../src/server/hold-metrics'

const entry = (key: string, revision: number, created: number, owner?: string, ttl?: number): Entry => ({ key, value: null, revision, created, ...(owner ? { owner } : {}), ...(ttl ? { ttl } : {}) })
const ok = (revision: number, entries: Entry[], deleted: string[] = []): CommitResult => ({ ok: true, revision, entries, deleted })
const count = (text: string[], series: string) => Number(text.find((l) => l.startsWith(series + ' '))?.split(' ')[1] ?? 0)

test('released, stolen, lost and expired holds, and waits from a place in line, each counted once', () => {
  let now = 0
  const m = new HoldMetrics(() => now)
  const set: Op[] = []
  m.commit('ns', [], set, ok(1, [entry('a', 1, 1, 'x', 1_000)]), now) // a taken at once
  m.commit('ns', [], set, ok(2, [entry('\u0001qa\u0001y', 2, 2, 'y')]), now) // y stands in line
  now = 500
  m.commit('ns', [{ key: 'a', created: 1 }], set, ok(3, [], ['a']), now) // x releases
  m.commit('ns', [], set, ok(4, [entry('a', 4, 4, 'y', 1_000)], ['\u0001qa\u0001y']), 490) // y takes it: waited 500 ms
  m.commit('ns', [], set, ok(5, [entry('a', 5, 5, 'z', 1_000)]), now) // z steals it
  m.commit('ns', [], set, ok(6, [entry('a', 6, 6)]), now) // a plain put over z's
  m.commit('ns', [], set, ok(7, [entry('b', 7, 7, 'x', 100)]), now) // b, never renewed
  now = 550
  m.commit('ns', [], set, ok(8, [entry('b', 8, 7, 'x', 100)]), now) // renewed: until 650
  now = 640
  expect(count(m.render(), 'zaris_hold_seconds_count{reason="expired"}')).toBe(0)
  now = 700
  const text = m.render()
  expect(['released', 'stolen', 'lost', 'expired'].map((r) => count(text, `zaris_hold_seconds_count{reason="${r}"}`))).toEqual([1, 1, 1, 1])
  expect(count(text, 'zaris_hold_seconds_sum{reason="expired"}')).toBeCloseTo(0.15) // from 500 to its TTL at 650
  expect(count(text, 'zaris_acquire_wait_seconds_count{outcome="held"}')).toBe(4)
  expect(count(text, 'zaris_acquire_wait_seconds_bucket{outcome="held",le="0.25"}')).toBe(3) // y's 500 ms is the one above
  expect(count(m.render(), 'zaris_hold_seconds_count{reason="expired"}')).toBe(1) // not twice
})

test(`it follows at most ${MAX_TRACKED} holds: the oldest are forgotten, uncounted`, () => {
  let now = 0
  const m = new HoldMetrics(() => now)
  for (let i = 0; i <= MAX_TRACKED; i++) m.commit('ns', [], [], ok(i + 1, [entry(`k${i}`, i + 1, i + 1, 'x', 10)]), now)
  now = 100
  expect(count(m.render(), 'zaris_hold_seconds_count{reason="expired"}')).toBe(MAX_TRACKED)
})
