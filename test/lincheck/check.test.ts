/**
 * The checker on small histories known to be linearizable and known not to
 * be: the classic register anomalies, the lock's (two grants at once, a
 * stale token accepted, the overwrite that keeps `created`), time (expiry
 * too early or too late, renewals), and operations of unknown outcome that
 * must count as applied, or as not applied, to explain what followed.
 */
import { describe, expect, test } from 'vitest'
import { HistoryBuilder, entry } from './builder'
import { checkHistory, formatResult, type CheckResult } from './check'
import { formatHistory, parseHistory } from './history'

const ok = (h: HistoryBuilder) => {
  const r = checkHistory(h.events)
  expect(r.verdict, formatResult(r)).toBe('ok')
  return r
}
const violation = (h: HistoryBuilder, mentions?: RegExp): CheckResult => {
  const r = checkHistory(h.events)
  expect(r.verdict, formatResult(r)).toBe('violation')
  if (mentions) expect(formatResult(r)).toMatch(mentions)
  return r
}

describe('a register with compare-and-set by revision', () => {
  test('sequential writes and reads are linearizable', () => {
    ok(new HistoryBuilder().put(1, [0, 1], 'x', 'a', 1).put(1, [2, 3], 'x', 'b', { revision: 2, created: 1 }).get(2, [4, 5], 'x', entry('x', 'b', 2, 1)))
  })

  test('stale read: a read after a write returned sees the value before it', () => {
    violation(new HistoryBuilder().put(1, [0, 1], 'x', 'a', 1).put(1, [2, 3], 'x', 'b', { revision: 2, created: 1 }).get(2, [4, 5], 'x', entry('x', 'a', 1)), /seen with value "a"/)
  })

  test('a read concurrent with a write may see either value', () => {
    ok(new HistoryBuilder().put(1, [0, 1], 'x', 'a', 1).put(1, [2, 10], 'x', 'b', { revision: 2, created: 1 }).get(2, [3, 4], 'x', entry('x', 'a', 1)).get(3, [5, 6], 'x', entry('x', 'b', 2, 1)))
  })

  test('a read cannot go back once another read saw the new value', () => {
    violation(new HistoryBuilder().put(1, [0, 1], 'x', 'a', 1).put(1, [2, 20], 'x', 'b', { revision: 2, created: 1 }).get(2, [3, 4], 'x', entry('x', 'b', 2, 1)).get(3, [5, 6], 'x', entry('x', 'a', 1)))
  })

  test('lost update: two compare-and-sets from the same revision both succeed', () => {
    violation(new HistoryBuilder().put(1, [0, 1], 'x', 0, 1).put(1, [2, 5], 'x', 1, { revision: 2, created: 1 }, 1).put(2, [2, 5], 'x', 2, { revision: 3, created: 1 }, 1), /does not hold/)
  })

  test('a compare-and-set refused while its revision was current', () => {
    violation(new HistoryBuilder().put(1, [0, 1], 'x', 0, 1).commit(2, [2, 3], [{ key: 'x', revision: 1 }], [{ type: 'set', key: 'x', value: 9 }], { failed: [{ key: 'x', entry: entry('x', 0, 1) }] }), /holds here/)
  })

  test('a delete of a live key must say it deleted it', () => {
    ok(new HistoryBuilder().put(1, [0, 1], 'x', 0, 1).commit(1, [2, 3], [], [{ type: 'delete', key: 'x' }], { revision: 2, deleted: ['x'] }).get(2, [4, 5], 'x', null))
    violation(new HistoryBuilder().put(1, [0, 1], 'x', 0, 1).commit(1, [2, 3], [], [{ type: 'delete', key: 'x' }], { revision: 2, deleted: [] }), /does not report deleting x/)
  })

  test('revisions rise on a partition', () => {
    violation(new HistoryBuilder().put(1, [0, 1], 'x', 0, 5).put(1, [2, 3], 'x', 1, { revision: 4, created: 5 }), /not above 5/)
  })
})

describe('a counter', () => {
  test('concurrent adds each see their own result', () => {
    ok(new HistoryBuilder().add(1, [0, 5], 'n', 1, { revision: 2, value: 2, created: 1 }).add(2, [0, 5], 'n', 1, { revision: 1, value: 1, created: 1 }))
  })
  test('two adds that return the same value lost one', () => {
    violation(new HistoryBuilder().add(1, [0, 5], 'n', 1, { revision: 1, value: 1, created: 1 }).add(2, [0, 5], 'n', 1, { revision: 2, value: 1, created: 1 }))
  })
})

describe('a fenced lock', () => {
  test('grant, fenced writes, release, the next grant: linearizable', () => {
    ok(
      new HistoryBuilder()
        .grant(1, [0, 1], 'lock', 1000, 1)
        .fenced(1, [2, 3], 'lock', 1, 'res', 'a', 2)
        .grant(2, [4, 5], 'lock', 1000, { held: entry('lock', null, 1, 1, 'c1', 996) })
        .release(1, [6, 7], 'lock', 1, 3)
        .grant(2, [8, 9], 'lock', 1000, 4)
        .fenced(2, [10, 11], 'lock', 4, 'res', 'b', { revision: 5, created: 2 })
        .fenced(1, [12, 13], 'lock', 1, 'res', 'stale', { refused: entry('lock', null, 4, 4, 'c2', 998) }),
    )
  })

  test('two grants overlapping', () => {
    violation(new HistoryBuilder().grant(1, [0, 1], 'lock', 1000, 1).grant(2, [10, 11], 'lock', 1000, 2), /grant lock to c2/)
  })

  test('a fenced write with an old token accepted after a newer grant (a steal)', () => {
    violation(
      new HistoryBuilder()
        .grant(1, [0, 1], 'lock', 1000, 1)
        .commit(2, [5, 6], [{ key: 'lock', revision: 1 }], [{ type: 'set', key: 'lock', value: null, ttl: 1000, owner: 'c2', fresh: true }], { revision: 2, entries: [entry('lock', null, 2, 2, 'c2', 1000)] })
        .fenced(1, [10, 11], 'lock', 1, 'res', 'stale', 3),
      /fenced put res="stale" by lock token 1/,
    )
  })

  test("issue 12: an ownerless overwrite of a lock key starts a new life (a store that keeps created is caught at once)", () => {
    const h = new HistoryBuilder().grant(1, [0, 1], 'lock', 200, 1).put(2, [2, 3], 'lock', 'clobbered', { revision: 2, created: 1 })
    violation(h, /the owner changes from c1 to nobody: a new life/)
    // And the fenced write that store then accepts is caught even when the store reports created honestly.
    violation(new HistoryBuilder().grant(1, [0, 1], 'lock', 200, 1).put(2, [2, 3], 'lock', 'clobbered', 2).fenced(1, [4, 5], 'lock', 1, 'data', 'x', 3), /created at 1 does not hold/)
  })

  test('a renewal by the same owner keeps the token; a renewal of a stolen lock is refused', () => {
    ok(new HistoryBuilder().grant(1, [0, 1], 'lock', 100, 1).renew(1, [50, 51], 'lock', 1, 100, 2).fenced(1, [60, 61], 'lock', 1, 'res', 'a', 3))
    violation(
      new HistoryBuilder()
        .grant(1, [0, 1], 'lock', 1000, 1)
        .commit(2, [5, 6], [{ key: 'lock', revision: 1 }], [{ type: 'set', key: 'lock', value: null, ttl: 1000, owner: 'c2', fresh: true }], { revision: 2, entries: [entry('lock', null, 2, 2, 'c2', 1000)] })
        .renew(1, [10, 11], 'lock', 1, 1000, 3),
    )
  })

  test('a release without the token check (deleting the next holder\'s lock) is caught', () => {
    violation(
      new HistoryBuilder()
        .grant(1, [0, 1], 'lock', 100, 1)
        .grant(2, [200, 201], 'lock', 100, 2) // after c1's expired
        .release(1, [210, 211], 'lock', 1, 3),
    )
  })
})

describe('time', () => {
  test('an entry may not expire before its TTL from the grant is up', () => {
    violation(new HistoryBuilder().grant(1, [0, 1], 'lock', 100, 1).get(2, [50, 51], 'lock', null), /seen absent/)
    violation(new HistoryBuilder().grant(1, [0, 1], 'lock', 100, 1).grant(2, [50, 51], 'lock', 100, 2))
  })

  test('an entry must have expired once its TTL from the grant\'s response is up', () => {
    violation(new HistoryBuilder().grant(1, [0, 1], 'lock', 100, 1).get(2, [102, 103], 'lock', entry('lock', null, 1, 1, 'c1', 1)))
    ok(new HistoryBuilder().grant(1, [0, 1], 'lock', 100, 1).grant(2, [102, 103], 'lock', 100, 2))
  })

  test('within the window both are possible', () => {
    ok(new HistoryBuilder().grant(1, [0, 10], 'lock', 100, 1).get(2, [105, 106], 'lock', null))
    ok(new HistoryBuilder().grant(1, [0, 10], 'lock', 100, 1).get(2, [105, 106], 'lock', entry('lock', null, 1, 1, 'c1', 4)))
  })

  test('a renewal extends the entry; without it the entry is gone', () => {
    ok(new HistoryBuilder().grant(1, [0, 1], 'lock', 100, 1).renew(1, [50, 51], 'lock', 1, 100, 2).get(2, [120, 121], 'lock', entry('lock', null, 2, 1, 'c1', 30)))
    violation(new HistoryBuilder().grant(1, [0, 1], 'lock', 100, 1).get(2, [120, 121], 'lock', entry('lock', null, 1, 1, 'c1', 30)))
  })

  test('a closed tab\'s entries may end at once (owner-gone)', () => {
    violation(new HistoryBuilder().grant(1, [0, 1], 'lock', 10_000, 1).grant(2, [50, 51], 'lock', 100, 2))
    ok(new HistoryBuilder().grant(1, [0, 1], 'lock', 10_000, 1).fault('owner-gone', 20, { owner: 'c1' }).grant(2, [50, 51], 'lock', 100, 2))
  })
})

describe('operations of unknown outcome', () => {
  test('an unknown write that must count as applied to explain a later read', () => {
    ok(new HistoryBuilder().put(1, [0, 1], 'x', 'a', 1).put(2, [2, 3], 'x', 'b', 'unknown').get(3, [10, 11], 'x', entry('x', 'b', 7, 1)))
  })

  test('an unknown write that must count as not applied to explain a later grant', () => {
    ok(new HistoryBuilder().grant(1, [0, 1], 'lock', 1000, 'unknown').grant(2, [10, 11], 'lock', 1000, 2).fenced(2, [12, 13], 'lock', 2, 'res', 'a', 3))
  })

  test('an unknown write may take effect long after its call, but not before it', () => {
    ok(new HistoryBuilder().put(1, [0, 1], 'x', 'a', 1).put(2, [2, 3], 'x', 'b', 'unknown').get(3, [10, 11], 'x', entry('x', 'a', 1)).get(3, [20, 21], 'x', entry('x', 'b', 9, 1)))
    violation(new HistoryBuilder().get(3, [0, 1], 'x', entry('x', 'b', 9)).put(2, [2, 3], 'x', 'b', 'unknown'))
  })

  test('an unknown write counted applied pins its revision: a read cannot see two', () => {
    violation(new HistoryBuilder().put(2, [2, 3], 'x', 'b', 'unknown').get(3, [10, 11], 'x', entry('x', 'b', 7)).get(3, [20, 21], 'x', entry('x', 'b', 8, 7)))
  })

  test('an unknown delete that changes nothing where it fits first may still take effect later (run 69: the search skipped it on the way back)', () => {
    // Called while x is absent (placed there it deletes nothing), it must land after the write to explain the read.
    ok(new HistoryBuilder().commit(1, [0, 100], [], [{ type: 'delete', key: 'x' }], 'unknown').put(2, [1, 2], 'x', 'a', 1).get(2, [3, 4], 'x', entry('x', 'a', 1)).get(2, [5, 6], 'x', null))
  })

  test('an unknown grant counted applied makes the lock held', () => {
    violation(
      new HistoryBuilder()
        .grant(1, [0, 1], 'lock', 1000, 'unknown')
        .get(3, [5, 6], 'lock', entry('lock', null, 4, 4, 'c1', 990))
        .grant(2, [10, 11], 'lock', 1000, 5),
    )
  })
})

describe('faults and the store-wide revision', () => {
  test('revisions rise across keys in real time', () => {
    ok(new HistoryBuilder().put(1, [0, 1], 'x', 0, 1).put(2, [2, 3], 'y', 0, 2))
    violation(new HistoryBuilder().put(1, [0, 1], 'x', 0, 5).put(2, [2, 3], 'y', 0, 3), /revision regression/)
  })

  test("a store that lost its state: entries gone, each client's tokens still above the ones it saw", () => {
    ok(new HistoryBuilder().grant(1, [0, 1], 'lock', 10_000, 5).fault('store-restart', 20, { start: 10 * 1e6 }).grant(2, [30, 31], 'lock', 100, 6))
    // Another client may get a token below one it never saw (the contract's promise is per client).
    ok(new HistoryBuilder().grant(1, [0, 1], 'lock', 10_000, 5).fault('store-restart', 20, { start: 10 * 1e6 }).grant(2, [30, 31], 'lock', 100, 1))
    violation(new HistoryBuilder().grant(1, [0, 1], 'lock', 10_000, 5).fault('store-restart', 20, { start: 10 * 1e6 }).grant(1, [30, 31], 'lock', 100, 1), /revision regression: .* got revision 1/)
    // A durable store (a --data node) keeps its entries and gives each its whole TTL again from when it reopened.
    const durable = new HistoryBuilder().grant(1, [0, 1], 'lock', 100, 5).fault('store-restart', 60, { start: 50 * 1e6, durable: true })
    ok(durable.get(2, [70, 71], 'x', null).get(2, [150, 151], 'lock', entry('lock', null, 5, 5, 'c1', 20)))
    violation(new HistoryBuilder().grant(1, [0, 1], 'lock', 100, 5).fault('store-restart', 60, { start: 50 * 1e6, durable: true }).get(2, [70, 71], 'lock', entry('lock', null, 5, 5, 'c1', 90)).get(2, [175, 176], 'lock', entry('lock', null, 5, 5, 'c1', 1)))
    // Without the restart, the lock was still held.
    violation(new HistoryBuilder().grant(1, [0, 1], 'lock', 10_000, 5).grant(2, [30, 31], 'lock', 100, 6))
  })
})

describe('gone owners', () => {
  /** Sixteen owners each write a place (a commit that also checks `hub`, so that one partition holds them all), then are gone one by one. */
  const places = () => {
    const h = new HistoryBuilder()
    for (let i = 1; i <= 16; i++) {
      const set = { type: 'set', key: `q.${i}`, value: null, ttl: 60_000, owner: `c${i}` } as const
      h.commit(i, [i * 10, i * 10 + 1], [{ key: 'hub', revision: null }], [set], { revision: i, entries: [{ key: `q.${i}`, value: null, revision: i, created: i, owner: `c${i}`, ttl: 60_000 }] })
    }
    for (let i = 1; i <= 16; i++) h.fault('owner-gone', 200 + i * 10, { owner: `c${i}` })
    return h
  }

  test("a gone owner's entry at a key nothing later touches is forgotten: sixteen places whose owners are gone are decided (each would double the states)", () => {
    const r = ok(places().get(99, [400, 401], 'hub', null))
    expect(r.partitions).toHaveLength(1)
  })

  test("one that a later operation touches is kept: a read of a gone owner's place with a revision never written is a violation", () => {
    violation(places().get(99, [400, 401], 'q.3', entry('q.3', null, 77, 77, 'c3', 59_000)))
    ok(places().get(99, [400, 401], 'q.3', entry('q.3', null, 3, 3, 'c3', 59_000)).get(99, [402, 403], 'q.4', null))
  })
})

describe('limits', () => {
  test('a partition undecided within the limits is checked on its writes alone, with fallback', () => {
    const h = new HistoryBuilder().grant(1, [0, 10], 'lock', 1000, 1).get(2, [1, 9], 'lock', entry('lock', null, 1, 1, 'c1', 995)).fenced(1, [11, 12], 'lock', 1, 'res', 'a', 2)
    const r = checkHistory(h.events, { maxSteps: 1, fallback: true })
    expect(r.verdict).toBe('unknown')
    expect(r.partitions[0]!.writesOnly?.verdict).toBe('ok')
    expect(formatResult(r)).toMatch(/undecided within the search's limits: keys lock, res \(3 operations, \d+ steps\); its writes alone .*: linearizable/)
    // A violation among the writes is still found.
    const bad = new HistoryBuilder().grant(1, [0, 1], 'lock', 1000, 1).get(2, [1, 9], 'lock', entry('lock', null, 1, 1, 'c1', 995)).grant(2, [10, 11], 'lock', 1000, 2)
    expect(checkHistory(bad.events, { maxSteps: 1, fallback: true }).verdict).toBe('violation')
  })
})

describe('files', () => {
  test('a history survives a round trip through the file format; a cut last line is skipped', () => {
    const h = new HistoryBuilder().grant(1, [0, 1], 'lock', 1000, 1).fenced(1, [2, 3], 'lock', 1, 'res', 'a', 2)
    const text = formatHistory(h.events)
    expect(checkHistory(parseHistory(text)).verdict).toBe('ok')
    expect(checkHistory(parseHistory(text + '{"process": 1, "ty')).verdict).toBe('ok')
    expect(checkHistory(parseHistory(JSON.stringify(h.events))).verdict).toBe('ok')
    expect(() => parseHistory('{"process": 1}\n{}\n')).toThrow(/type must be/)
  })

  test('the report names the smallest failing partition and the operations involved', () => {
    const h = new HistoryBuilder()
      .grant(1, [0, 1], 'lock:a', 1000, 1)
      .grant(2, [10, 11], 'lock:a', 1000, 2)
      .put(3, [0, 1], 'other', 1, 3)
    const text = formatResult(checkHistory(h.events))
    expect(text).toMatch(/NOT linearizable: 3 operations/)
    expect(text).toMatch(/smallest: keys lock:a \(2 operations\)/)
    expect(text).toMatch(/grant lock:a to c1/)
    expect(text).toMatch(/refused: .*lock:a at revision none \(absent\) does not hold/)
  })
})
