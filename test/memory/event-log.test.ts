/**
 * The in-process stores' watch ring: events kept in parallel arrays that wrap
 * at the capacity. Replays from any revision still in the ring come back in
 * order and whole; one from before it gets a CompactedError, never a gap.
 */
import { describe, expect, test } from 'vitest'
import type { WatchEvent } from 'zaris'
import { EventLog, LogBudget, valueBytes } from '../../src/adapters/kit/event-log'
import { Random } from '../faults/scale'

function replay(log: EventLog, prefix: string, from: number): { events: WatchEvent[]; errors: Error[] } {
  const events: WatchEvent[] = []
  const errors: Error[] = []
  const stop = log.subscribe(prefix, { event: (e) => events.push(e), error: (e) => errors.push(e) }, from)
  stop()
  return { events, errors }
}

/** Event `r` of a log where odd revisions are puts of `k:<r % 3>` and even ones deletes or expiries. */
function event(r: number): WatchEvent {
  const key = `${r % 4 === 0 ? 'x' : 'k'}:${r % 3}`
  if (r % 2 === 1) {
    const e: WatchEvent = { type: 'put', key, revision: r, value: { r, list: [r] }, created: r - (r % 5) }
    if (r % 3 === 0) e.owner = `o${r}`
    if (r % 7 === 0) e.ttl = r * 10
    return e
  }
  return { type: r % 6 === 0 ? 'expire' : 'delete', key, revision: r }
}

describe('EventLog ring', () => {
  test.each([1, 2, 5, 7, 64])('capacity %i: replays across many wraps are exact, older ones are compacted', (capacity) => {
    const log = new EventLog(capacity, 0)
    for (let r = 1; r <= 200; r++) {
      const e = event(r)
      if (e.type === 'put') {
        // Puts come in as the store's entry; the log builds the event itself.
        const put = { key: e.key, revision: e.revision, value: e.value!, created: e.created!, ...(e.owner ? { owner: e.owner } : {}), ...(e.ttl ? { ttl: e.ttl } : {}) }
        log.appendPut(put)
      } else log.append(e)
      const oldest = Math.max(1, r - capacity + 1)
      // From the revision just before the oldest kept event: everything kept, in order.
      const ok = replay(log, '', oldest - 1)
      expect(ok.errors).toEqual([])
      expect(ok.events).toEqual(Array.from({ length: r - oldest + 1 }, (_, i) => event(oldest + i)))
      // With a prefix, from the middle.
      const mid = Math.max(oldest - 1, r - 3)
      expect(replay(log, 'k:', mid).events).toEqual(Array.from({ length: r - mid }, (_, i) => event(mid + 1 + i)).filter((e) => e.key.startsWith('k:')))
      if (oldest > 1) {
        const old = replay(log, '', oldest - 2)
        expect(old.events).toEqual([])
        expect(old.errors).toHaveLength(1)
        expect(old.errors[0]).toMatchObject({ code: 'COMPACTED' })
      }
    }
  })

  test('a live put reaches only matching watchers, as one event with its own value copy per replay', () => {
    const log = new EventLog(10, 0)
    const a: WatchEvent[] = []
    const b: WatchEvent[] = []
    log.subscribe('a:', { event: (e) => a.push(e), error: () => {} })
    log.subscribe('b:', { event: (e) => b.push(e), error: () => {} })
    const value = { n: 1 }
    log.appendPut({ key: 'a:1', revision: 1, value, created: 1 })
    expect(a).toEqual([{ type: 'put', key: 'a:1', revision: 1, value: { n: 1 }, created: 1 }])
    expect(b).toEqual([])
    ;(a[0]!.value as { n: number }).n = 2
    expect(replay(log, 'a:', 0).events[0]!.value).toEqual({ n: 1 })
    expect(log.watchers).toBe(2)
  })
})

/** A put of `bytes` (about: the value is a string of half as many characters) at `key`, revision `r`. */
function put(log: EventLog, key: string, r: number, chars: number): void {
  log.appendPut({ key, revision: r, value: 'x'.repeat(chars), created: r })
}

describe('EventLog bounds in bytes, paged reads', () => {
  test('read: pages cut between revisions, complete up to through; older history is CompactedError', () => {
    const log = new EventLog(100, 0)
    // Revisions 1..20, two events each (one commit writes a/ and b/).
    for (let r = 1; r <= 20; r++) {
      put(log, `a/${r}`, r, 10)
      put(log, `b/${r}`, r, 10)
    }
    const page = log.read('', 0, { maxEvents: 5, maxBytes: Infinity })
    // Five events reached mid-revision 3: it is finished, then the page stops.
    expect(page.events.map((e) => e.key)).toEqual(['a/1', 'b/1', 'a/2', 'b/2', 'a/3', 'b/3'])
    expect(page).toMatchObject({ through: 3, more: true })
    expect(log.read('b/', 3, { maxEvents: 2, maxBytes: Infinity })).toMatchObject({ through: 5, more: true })
    const rest = log.read('a/', 17, { maxEvents: 100, maxBytes: Infinity })
    expect(rest.events.map((e) => e.key)).toEqual(['a/18', 'a/19', 'a/20'])
    expect(rest).toMatchObject({ through: 20, more: false })
    // By bytes: each event here is about 64 + 6 + 36 bytes; 300 bytes hold three, and the revision is finished.
    expect(log.read('', 0, { maxEvents: 1_000, maxBytes: 300 }).events).toHaveLength(4)
    // Paging through gives every event once, in order.
    const all: string[] = []
    for (let after = 0, more = true; more; ) {
      const p = log.read('', after, { maxEvents: 3, maxBytes: Infinity })
      all.push(...p.events.map((e) => e.key))
      ;({ through: after, more } = p)
    }
    expect(all).toEqual(Array.from({ length: 20 }, (_, i) => [`a/${i + 1}`, `b/${i + 1}`]).flat())
    const small = new EventLog(4, 0)
    for (let r = 1; r <= 6; r++) put(small, 'k', r, 1)
    expect(() => small.read('', 1, { maxEvents: 10, maxBytes: Infinity })).toThrow(expect.objectContaining({ code: 'COMPACTED' }))
    expect(small.read('', 2, { maxEvents: 10, maxBytes: Infinity }).events.map((e) => e.revision)).toEqual([3, 4, 5, 6])
  })

  test('a log over its bytes drops its oldest events (compaction), keeping the newest however large', () => {
    const log = new EventLog({ maxEvents: 1_000, maxBytes: 10_000 }, 0)
    for (let r = 1; r <= 100; r++) put(log, 'k', r, 1_000)
    expect(log.bytes).toBeLessThanOrEqual(10_000)
    expect(log.size).toBe(Math.floor(10_000 / (64 + 2 + valueBytes('x'.repeat(1_000)))))
    expect(log.compactedThrough).toBe(100 - log.size)
    put(log, 'big', 101, 100_000)
    expect(log.size).toBe(1)
    expect(log.read('', 100, { maxEvents: 10, maxBytes: 10 }).events.map((e) => e.key)).toEqual(['big'])
    const errors: Error[] = []
    log.subscribe('', { event: () => {}, error: (e) => errors.push(e) }, 99)
    expect(errors[0]).toMatchObject({ code: 'COMPACTED' })
  })

  test('a budget shared by logs drops the oldest events of the node first, whichever log holds them (model check)', () => {
    const random = new Random(7)
    const budget = new LogBudget(50_000)
    // Some logs with limits of their own (count, bytes), so the budget meets events they dropped already.
    const logs = Array.from({ length: 6 }, (_, i) => new EventLog({ maxEvents: i === 0 ? 5 : 10_000, maxBytes: i === 1 ? 8_000 : undefined, budget }, 0))
    const appended: Array<{ log: number; revision: number; size: number }> = []
    const revisions = logs.map(() => 0)
    for (let step = 0; step < 3_000; step++) {
      const l = random.int(logs.length)
      const chars = random.chance(0.05) ? 5_000 + random.int(30_000) : random.int(600)
      const revision = ++revisions[l]!
      put(logs[l]!, 'k', revision, chars)
      appended.push({ log: l, revision, size: 64 + 2 + valueBytes('x'.repeat(chars)) })
      const kept = logs.map((log) => (log.size === 0 ? [] : log.read('', log.compactedThrough, { maxEvents: Infinity, maxBytes: Infinity }).events.map((e) => e.revision)))
      // Accounting holds, and the budget is kept (the newest event may be bigger than it on its own).
      expect(budget.used).toBe(logs.reduce((n, log) => n + log.bytes, 0))
      expect(budget.used <= budget.maxBytes || logs.reduce((n, log) => n + log.size, 0) === 1).toBe(true)
      // Each log keeps a run of its newest events, the one just appended included.
      for (let i = 0; i < logs.length; i++) {
        if (revisions[i] === 0) continue
        expect(kept[i]).toEqual(Array.from({ length: kept[i]!.length }, (_, j) => revisions[i]! - kept[i]!.length + 1 + j))
      }
      expect(kept[l]!.at(-1)).toBe(revision)
      // Among the logs without limits of their own, an event is kept only if every later one is: first in, first out.
      const isKept = (e: { log: number; revision: number }) => kept[e.log]!.includes(e.revision)
      const free = appended.filter((e) => e.log >= 2)
      const firstKept = free.findIndex(isKept)
      if (firstKept >= 0) expect(free.slice(firstKept).every(isKept)).toBe(true)
    }
    // Closing a log gives its bytes back.
    const before = budget.used
    const bytes = logs[3]!.bytes
    logs[3]!.closeAll(new Error('closed'))
    expect(budget.used).toBe(before - bytes)
  })
})
