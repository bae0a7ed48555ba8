/**
 * The lock family's models (family.ts) on small histories known to be
 * linearizable and known not to be: a semaphore that overfills, a slot
 * given twice, a shared hold beside an exclusive one, tokens that do not
 * rise, releases, renewals and fenced writes of holds that are gone — and
 * what time, unknown outcomes, a closed tab and a steal allow.
 */
import { describe, expect, test } from 'vitest'
import { HistoryBuilder } from './builder'
import { checkHistory, formatResult } from './check'
import { formatHistory, parseHistory } from './history'

const ok = (h: HistoryBuilder) => {
  const r = checkHistory(h.events)
  expect(r.verdict, formatResult(r)).toBe('ok')
}
const violation = (h: HistoryBuilder, mentions?: RegExp) => {
  const r = checkHistory(h.events)
  expect(r.verdict, formatResult(r)).toBe('violation')
  if (mentions) expect(formatResult(r)).toMatch(mentions)
}
const permit = (limit: number, ttl = 1000, key = 'uploads') => ({ key, limit, ttl })
const lock = (mode: 'exclusive' | 'shared', ttl = 1000, key = 'rw') => ({ key, mode, ttl })

describe('a semaphore', () => {
  test('limit 2: two permits at once, a third refused, the freed one taken again: linearizable', () => {
    ok(
      new HistoryBuilder()
        .acquire(1, [0, 1], 'permit', permit(2), 1)
        .acquire(2, [2, 3], 'permit', permit(2), 2)
        .acquire(3, [4, 5], 'permit', permit(2), null)
        .hold(1, [6, 7], 'permit', 'release', 'uploads', 1, true)
        .acquire(3, [8, 9], 'permit', permit(2), 4)
        .hold(3, [10, 11], 'permit', 'fenced', 'uploads', 4, true)
        .hold(1, [12, 13], 'permit', 'fenced', 'uploads', 1, false),
    )
  })

  test('limit + 1 live permits (the grants overlap in real time) is caught', () => {
    violation(
      new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(2), 1).acquire(2, [2, 3], 'permit', permit(2), 2).acquire(3, [4, 5], 'permit', permit(2), 3),
      /granted c\d a permit of uploads \(limit 2\), but 2 live here/,
    )
  })

  test('concurrent grants may be ordered either way, but not all three beside each other', () => {
    ok(new HistoryBuilder().acquire(1, [0, 10], 'permit', permit(2), 2).acquire(2, [0, 10], 'permit', permit(2), 1).hold(2, [11, 12], 'permit', 'release', 'uploads', 1, true).acquire(3, [11, 20], 'permit', permit(2), 4))
    violation(new HistoryBuilder().acquire(1, [0, 10], 'permit', permit(2), 2).acquire(2, [0, 10], 'permit', permit(2), 1).acquire(3, [0, 10], 'permit', permit(2), 3))
  })

  test('a permit expired at its TTL frees its place; before it, it still counts', () => {
    ok(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1, 100), 1).acquire(2, [102, 103], 'permit', permit(1), 2))
    violation(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1, 100), 1).acquire(2, [50, 51], 'permit', permit(1), 2))
  })

  test('a reported slot must be below the limit and free; mixed limits follow the slots rule', () => {
    violation(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(2), { token: 1, slot: 0 }).acquire(2, [2, 3], 'permit', permit(2), { token: 2, slot: 0 }), /slot 0 of uploads, but c1's permit \(slot 0\)/)
    violation(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(2), { token: 1, slot: 2 }), /not below its limit 2/)
    // Three permits of limit 3 live; a request with limit 1 may take only slot 0, which is held.
    const three = () => new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(3), { token: 1, slot: 0 }).acquire(2, [2, 3], 'permit', permit(3), { token: 2, slot: 1 }).acquire(3, [4, 5], 'permit', permit(3), { token: 3, slot: 2 })
    violation(three().acquire(4, [6, 7], 'permit', permit(1), { token: 4, slot: 0 }), /slot 0/)
    // Without slots the count rule alone: a limit-1 permit counts none of the limit-3 ones.
    ok(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(3), 1).acquire(2, [2, 3], 'permit', permit(3), 2).acquire(4, [6, 7], 'permit', permit(1), 4))
    // But a limit-3 request counts the limit-1 permit.
    violation(new HistoryBuilder().acquire(4, [0, 1], 'permit', permit(1), 1).acquire(1, [2, 3], 'permit', permit(3), 2).acquire(2, [4, 5], 'permit', permit(3), 3).acquire(3, [6, 7], 'permit', permit(3), 4), /limit 3\), but 3 live/)
  })

  test('tokens rise per key: a grant below a token already handed out is caught', () => {
    violation(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(3), 5).acquire(2, [2, 3], 'permit', permit(3), 4), /token 4 is not above 5/)
    // Store-wide, across keys and kinds too: the token is the revision of the commit that granted it.
    violation(new HistoryBuilder().put(1, [0, 1], 'x', 0, 9).acquire(2, [2, 3], 'permit', permit(3), 4), /revision regression/)
  })

  test('a semaphore and a lock named alike are different things', () => {
    ok(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1, 1000, 'k'), 1).acquire(2, [2, 3], 'lock', lock('exclusive', 1000, 'k'), 2))
  })

  test('release, renew and fenced writes of a permit that is gone', () => {
    violation(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1, 100), 1).hold(1, [150, 151], 'permit', 'release', 'uploads', 1, true), /released permit uploads token 1, which does not live here/)
    ok(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1, 100), 1).hold(1, [150, 151], 'permit', 'release', 'uploads', 1, false))
    violation(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1, 100), 1).hold(1, [150, 151], 'permit', 'renew', 'uploads', 1, true, 100))
    violation(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(2), 1).hold(1, [2, 3], 'permit', 'release', 'uploads', 1, true).hold(1, [4, 5], 'permit', 'fenced', 'uploads', 1, true), /accepted, but that hold does not live here/)
    violation(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(2), 1).hold(1, [4, 5], 'permit', 'fenced', 'uploads', 1, false), /was refused, but c1's permit .* lives here/)
  })

  test('a call refused as bad input changes nothing', () => {
    ok(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1), 1).op(1, 2, 3, 'permit-renew', { key: 'uploads', token: 1, ttl: -1 }, 'fail', { error: 'INVALID_ARGUMENT' }).hold(1, [4, 5], 'permit', 'fenced', 'uploads', 1, true))
    violation(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1), 1).op(2, 2, 3, 'permit-acquire', { key: 'uploads', limit: 0, ttl: 10 }, 'fail', { error: 'INVALID_ARGUMENT' }).acquire(3, [4, 5], 'permit', permit(1), 2))
  })

  test('a renewal keeps a permit alive past its first TTL', () => {
    ok(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1, 100), 1).hold(1, [60, 61], 'permit', 'renew', 'uploads', 1, true, 100).hold(1, [140, 141], 'permit', 'fenced', 'uploads', 1, true).hold(1, [150, 151], 'permit', 'release', 'uploads', 1, true))
    violation(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1, 100), 1).hold(1, [60, 61], 'permit', 'renew', 'uploads', 1, true, 100).acquire(2, [140, 141], 'permit', permit(1), 3))
  })

  test('unknown outcomes: a grant that may not have happened, a release that may have', () => {
    ok(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1), 'unknown').acquire(2, [10, 11], 'permit', permit(1), 2))
    ok(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1), 1).hold(1, [2, 3], 'permit', 'release', 'uploads', 1, 'unknown').acquire(2, [10, 11], 'permit', permit(1), 3))
    // Two grants that must both stand are still too many, whatever the unknown one did.
    violation(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1), 'unknown').acquire(2, [10, 11], 'permit', permit(1), 2).acquire(3, [12, 13], 'permit', permit(1), 3))
  })

  test("a closed tab's permit may end at once (owner-gone)", () => {
    violation(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1, 10_000), 1).acquire(2, [50, 51], 'permit', permit(1), 2))
    ok(new HistoryBuilder().acquire(1, [0, 1], 'permit', permit(1, 10_000), 1).fault('owner-gone', 20, { owner: 'c1' }).acquire(2, [50, 51], 'permit', permit(1), 2))
  })
})

describe('a reader-writer lock', () => {
  test('shared holds overlap; an exclusive one follows them: linearizable', () => {
    ok(
      new HistoryBuilder()
        .acquire(1, [0, 1], 'lock', lock('shared'), 1)
        .acquire(2, [2, 3], 'lock', lock('shared'), 2)
        .acquire(3, [4, 5], 'lock', lock('exclusive'), null)
        .hold(1, [6, 7], 'lock', 'fenced', 'rw', 1, true)
        .hold(1, [8, 9], 'lock', 'release', 'rw', 1, true)
        .hold(2, [8, 9], 'lock', 'release', 'rw', 2, true)
        .acquire(3, [10, 11], 'lock', lock('exclusive'), 5)
        .hold(2, [12, 13], 'lock', 'fenced', 'rw', 2, false),
    )
  })

  test('a shared grant beside an exclusive holder is caught', () => {
    violation(new HistoryBuilder().acquire(1, [0, 1], 'lock', lock('exclusive'), 1).acquire(2, [2, 3], 'lock', lock('shared'), 2), /granted rw shared to c2, but c1's exclusive hold of rw \(token 1\) lives here/)
  })

  test('an exclusive grant beside shared holders is caught, and two exclusive ones', () => {
    violation(new HistoryBuilder().acquire(1, [0, 1], 'lock', lock('shared'), 1).acquire(2, [2, 3], 'lock', lock('shared'), 2).acquire(3, [4, 5], 'lock', lock('exclusive'), 3), /granted rw exclusive to c3, but c1's shared hold .*, c2's shared hold .* live here/)
    violation(new HistoryBuilder().acquire(1, [0, 1], 'lock', lock('exclusive'), 1).acquire(2, [2, 3], 'lock', lock('exclusive'), 2))
    // Once the shared hold released, it may come.
    ok(new HistoryBuilder().acquire(1, [0, 1], 'lock', lock('shared'), 1).hold(1, [2, 3], 'lock', 'release', 'rw', 1, true).acquire(3, [4, 5], 'lock', lock('exclusive'), 3))
  })

  test('a steal ends every shared hold: their fenced writes refused after it, never accepted', () => {
    const stolen = () => new HistoryBuilder().acquire(1, [0, 1], 'lock', lock('shared'), 1).acquire(2, [2, 3], 'lock', lock('shared'), 2).acquire(3, [4, 5], 'lock', { ...lock('exclusive'), steal: true }, 3)
    ok(stolen().hold(1, [6, 7], 'lock', 'fenced', 'rw', 1, false).hold(2, [6, 7], 'lock', 'renew', 'rw', 2, false, 1000).hold(3, [8, 9], 'lock', 'fenced', 'rw', 3, true))
    violation(stolen().hold(2, [6, 7], 'lock', 'fenced', 'rw', 2, true), /fenced by lock rw token 2 was accepted/)
  })

  test('several keys at once: all granted in one commit, each key held exclusively', () => {
    const set = () => new HistoryBuilder().acquire(1, [0, 1], 'lock', { keys: ['a', 'b'], mode: 'exclusive', ttl: 1000 }, 1)
    ok(set().acquire(2, [2, 3], 'lock', { key: 'c', mode: 'exclusive', ttl: 1000 }, 2).hold(1, [4, 5], 'lock', 'release', 'b', 1, true).acquire(3, [6, 7], 'lock', { keys: ['b', 'd'], mode: 'shared', ttl: 1000 }, 4))
    violation(set().acquire(2, [2, 3], 'lock', { keys: ['c', 'b'], mode: 'exclusive', ttl: 1000 }, 2), /granted b exclusive to c2/)
  })

  test('a renewal answered false after extending: the hold may end at any later point', () => {
    // The core deletes such a hold after its renewal answers (the holder was told it lost): a later grant may come at once.
    ok(new HistoryBuilder().acquire(1, [0, 1], 'lock', lock('exclusive', 100), 1).hold(1, [90, 95], 'lock', 'renew', 'rw', 1, false, 100).acquire(2, [96, 97], 'lock', lock('exclusive'), 4))
    // And until then its fenced writes may still pass.
    ok(new HistoryBuilder().acquire(1, [0, 1], 'lock', lock('exclusive', 100), 1).hold(1, [90, 95], 'lock', 'renew', 'rw', 1, false, 100).hold(1, [96, 97], 'lock', 'fenced', 'rw', 1, true))
  })

  test('a store that lost its state ends every hold; a durable one keeps them', () => {
    ok(new HistoryBuilder().acquire(1, [0, 1], 'lock', lock('exclusive', 10_000), 5).fault('store-restart', 20, { start: 10e6 }).acquire(2, [30, 31], 'lock', lock('exclusive'), 6))
    violation(new HistoryBuilder().acquire(1, [0, 1], 'lock', lock('exclusive', 10_000), 5).fault('store-restart', 20, { start: 10e6, durable: true }).acquire(2, [30, 31], 'lock', lock('exclusive'), 6))
  })
})

describe('files and reports', () => {
  test('a lock-family history survives the file format and reads in words', () => {
    const h = new HistoryBuilder().acquire(1, [0, 1], 'lock', lock('exclusive'), 1).acquire(2, [2, 3], 'lock', lock('shared'), 2)
    const r = checkHistory(parseHistory(formatHistory(h.events)))
    expect(r.verdict).toBe('violation')
    const text = formatResult(r)
    expect(text).toMatch(/smallest: keys lock rw \(2 operations\)/)
    expect(text).toMatch(/c1: acquire rw exclusive \(TTL 1000\) -> token 1/)
    expect(text).toMatch(/c2: acquire rw shared \(TTL 1000\) -> token 2/)
  })
})
