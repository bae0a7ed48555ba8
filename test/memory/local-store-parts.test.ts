/**
 * The LocalStore kernel's parts that local-store.test.ts (tombstones, the
 * quota's sharing) does not pin: a durable store's start from its saved
 * state, the check kinds, pages of `list`, history's `through`, the floor a
 * client's `seen` sets, the quota at its edge, the expiry timer and its
 * retry, `close`, the adapter shell, and the bound on tombstones both ways
 * (through `keptKeys`: no read can see a tombstone). Written from the mutants Stryker left alive
 * (RELIABILITY.md, "Mutation score"). Persistence here is an array the test
 * reads (named so): the SQLite file's own is tested in test/server/sqlite.test.ts.
 */
import { describe, expect, test } from 'vitest'
import type { Op, WatchEvent } from 'zaris'
import { ManualClock } from 'zaris/testing'
import { LocalStore, StoreQuota } from '../../src/adapters/kit/local-store'
import { localAdapter } from '../../src/adapters/kit/local-adapter'
import { LogBudget } from '../../src/adapters/kit/event-log'
import type { Stored } from '../../src/adapters/kit/write'
import { arrayDisk } from './array-disk'


const set = (key: string, value: unknown, ttl?: number): Op => (ttl === undefined ? { type: 'set', key, value } : { type: 'set', key, value, ttl }) as Op

function collect(s: LocalStore, prefix = '', from?: number): { events: WatchEvent[]; errors: Error[] } {
  const events: WatchEvent[] = []
  const errors: Error[] = []
  s.watch(prefix, { event: (ev) => events.push(ev), error: (err) => errors.push(err) }, from)
  return { events, errors }
}

describe('a store started from a durable state (initial)', () => {
  test('continues its revisions, hands out the entries as saved, and expires them at their saved deadlines', async () => {
    const clock = new ManualClock()
    const entries: Stored[] = [
      { key: 'lock', value: null, revision: 40, created: 38, owner: 'o1', ttl: 1_000, expiresAt: 500 },
      { key: 'plain', value: { n: 1 }, revision: 41, created: 41 },
    ]
    const s = new LocalStore({ clock, initial: { revision: 42, entries } })
    expect(s.revision).toBe(42)
    expect(s.size).toBe(2)
    expect(s.get('lock')).toEqual({ key: 'lock', value: null, revision: 40, created: 38, owner: 'o1', ttl: 500 })
    expect(s.list('').entries.map((e) => e.key)).toEqual(['lock', 'plain'])
    // A renewal checks the saved life, and keeps it.
    const r = s.commit([{ key: 'lock', created: 38 }], [{ type: 'set', key: 'lock', value: null, owner: 'o1', ttl: 1_000 }])
    expect(r).toMatchObject({ ok: true, revision: 43, entries: [{ created: 38, revision: 43 }] })
    // A watch from the start revision replays nothing and sees what follows.
    const w = collect(s, '', 42)
    expect(w.events.map((e) => e.revision)).toEqual([43])
    expect(w.errors).toEqual([])
    await clock.advance(999)
    expect(s.get('lock')).toMatchObject({ ttl: 1 })
    await clock.advance(1)
    expect(s.get('lock')).toBeUndefined()
    expect(w.events.at(-1)).toEqual({ type: 'expire', key: 'lock', revision: 44 })
  })

  test('an entry saved with a deadline and no commit after it expires on the timer set at start', async () => {
    const clock = new ManualClock()
    const s = new LocalStore({ clock, initial: { revision: 5, entries: [{ key: 'lease', value: 1, revision: 5, created: 5, ttl: 100, expiresAt: 100 }] } })
    const w = collect(s)
    await clock.advance(100)
    // The watch hears it without any read: the timer was set by the constructor.
    expect(w.events).toEqual([{ type: 'expire', key: 'lease', revision: 6 }])
  })

  test('the saved entries count in the quota: a commit that would grow past it is refused', () => {
    const clock = new ManualClock()
    const quota = new StoreQuota(1_000)
    const big = 'x'.repeat(400) // 800 bytes of UTF-16 and the entry's overhead: most of the quota
    new LocalStore({ clock, quota, initial: { revision: 1, entries: [{ key: 'big', value: big, revision: 1, created: 1 }] } })
    expect(quota.used).toBeGreaterThan(800)
    const other = new LocalStore({ clock, quota })
    expect(() => other.commit([], [set('k', 'y'.repeat(100))])).toThrow(expect.objectContaining({ code: 'TOO_LARGE' }))
  })
})

describe('checks', () => {
  test('a `created: null` check holds only while the key is absent', () => {
    const s = new LocalStore({ clock: new ManualClock() })
    expect(s.commit([{ key: 'a', created: null }], [set('a', 1)]).ok).toBe(true)
    const refused = s.commit([{ key: 'a', created: null }], [set('a', 2)])
    expect(refused).toEqual({ ok: false, failed: [{ key: 'a', entry: { key: 'a', value: 1, revision: 1, created: 1 } }] })
    expect(s.get('a')!.value).toBe(1)
  })
})

describe('reads', () => {
  test('an entry written without an owner or a TTL has no such fields at all', () => {
    const s = new LocalStore({ clock: new ManualClock() })
    const r = s.commit([], [set('a', 1)])
    expect(r.ok && Object.keys(r.entries[0]!)).toEqual(['key', 'value', 'revision', 'created'])
    expect(Object.keys(s.get('a')!)).toEqual(['key', 'value', 'revision', 'created'])
    expect(Object.keys(s.list('').entries[0]!)).toEqual(['key', 'value', 'revision', 'created'])
  })
})

describe('list pages', () => {
  test('a page stops at its limit and says more follow, only when a live entry does; it never runs past the prefix', () => {
    const s = new LocalStore({ clock: new ManualClock() })
    s.commit([], ['a/1', 'a/2', 'a/3', 'a/4', 'b/1'].map((k) => set(k, k)))
    s.commit([], [{ type: 'delete', key: 'a/4' }])
    const keys = (p: { entries: Array<{ key: string }> }) => p.entries.map((e) => e.key)
    expect(s.list('a/', undefined, 2)).toMatchObject({ more: true })
    expect(keys(s.list('a/', undefined, 2))).toEqual(['a/1', 'a/2'])
    expect(keys(s.list('a/', 'a/2', 2))).toEqual(['a/3'])
    // a/4 is a tombstone: the page that ends on a/3 has nothing more to give.
    expect(s.list('a/', 'a/2', 1)).toEqual({ entries: [expect.objectContaining({ key: 'a/3' })], more: false })
    expect(s.list('a/', undefined, 3).more).toBe(false)
    expect(keys(s.list('a/'))).toEqual(['a/1', 'a/2', 'a/3'])
    expect(keys(s.list(''))).toEqual(['a/1', 'a/2', 'a/3', 'b/1'])
  })
})

describe('commits', () => {
  test('a refused commit still lifts a store that is behind the revision its client has seen', () => {
    const s = new LocalStore({ clock: new ManualClock() })
    s.commit([], [set('a', 1)])
    const r = s.commit([{ key: 'a', revision: 7 }], [set('a', 2)], 50)
    expect(r.ok).toBe(false)
    expect(s.revision).toBe(50)
    const next = s.commit([], [set('a', 3)])
    expect(next).toMatchObject({ ok: true, revision: 51 })
  })

  test('a commit that checks one key and writes others writes each to its own key', () => {
    const s = new LocalStore({ clock: new ManualClock() })
    s.commit([], [set('group', 'g'), set('old', 'o')])
    const r = s.commit([{ key: 'group', revision: 1 }], [set('share', 's'), { type: 'delete', key: 'old' }, set('group', 'g2')])
    expect(r).toMatchObject({ ok: true, deleted: ['old'] })
    expect(s.list('').entries.map((e) => [e.key, e.value, e.created])).toEqual([
      ['group', 'g2', 1],
      ['share', 's', 2],
    ])
  })

  test('a commit with no ops takes a revision and writes nothing', () => {
    const s = new LocalStore({ clock: new ManualClock() })
    s.commit([], [set('a', 1)])
    expect(s.commit([{ key: 'a', revision: 1 }], [])).toEqual({ ok: true, revision: 2, entries: [], deleted: [] })
    expect(s.get('a')).toMatchObject({ revision: 1 })
  })
})

describe('history', () => {
  test('a page with nothing more is complete up to the store revision, even past its last event; a cut page only up to its own', () => {
    const s = new LocalStore({ clock: new ManualClock() })
    s.commit([], [set('a', 1)])
    s.commit([], [set('b', 2)])
    s.commit([], [set('a', 3)])
    const cut = s.history('', 0, { maxEvents: 1, maxBytes: 1e9 })
    expect(cut).toMatchObject({ through: 1, more: true, events: [{ key: 'a', revision: 1 }] })
    // The floor of a client's `seen` moves the store with no event.
    s.commit([{ key: 'a', revision: 1 }], [], 20)
    const rest = s.history('a', 1, { maxEvents: 100, maxBytes: 1e9 })
    expect(rest).toMatchObject({ through: 20, more: false })
    expect(rest.events.map((e) => e.revision)).toEqual([3])
  })
})

describe('the quota at its edge', () => {
  /** A store whose quota one entry of a one-letter key and 100 letters fills exactly (its bytes measured by another store). */
  function full() {
    const measure = new StoreQuota(1e9)
    new LocalStore({ clock: new ManualClock(), quota: measure }).commit([], [set('m', 'x'.repeat(100))])
    const q = new StoreQuota(measure.used)
    return { q, s: new LocalStore({ clock: new ManualClock(), quota: q }) }
  }

  test('a commit that fills the quota exactly goes through; one byte more does not', () => {
    const { q, s } = full()
    expect(s.commit([], [set('a', 'x'.repeat(100))]).ok).toBe(true)
    expect(q.used).toBe(q.maxBytes)
    expect(() => s.commit([], [set('b', null)])).toThrow(expect.objectContaining({ code: 'TOO_LARGE' }))
  })

  test('with the quota full, a same-size rewrite and a commit whose delete frees what its put takes go through', () => {
    const { q, s } = full()
    s.commit([], [set('a', 'x'.repeat(100))])
    expect(s.commit([{ key: 'a', revision: 1 }], [set('a', 'y'.repeat(100))]).ok).toBe(true)
    // b's key is as long as a's: a's bytes pay for it.
    expect(s.commit([], [{ type: 'delete', key: 'a' }, set('b', 'z'.repeat(100))])).toMatchObject({ ok: true, deleted: ['a'] })
    expect(q.used).toBe(q.maxBytes)
    expect(s.get('b')!.value).toBe('z'.repeat(100))
    // A write over a deleted key's slot pays for the whole entry again.
    s.commit([], [{ type: 'delete', key: 'b' }])
    expect(q.used).toBe(0)
    expect(s.commit([], [set('a', 'w'.repeat(100))]).ok).toBe(true)
    expect(q.used).toBe(q.maxBytes)
  })

  test('a store loaded over its quota (the limit lowered since) still takes renewals, shrinking writes and deletes, and refuses growth', () => {
    const q = new StoreQuota(100)
    const lock: Stored = { key: 'lock', value: 'x'.repeat(100), revision: 2, created: 1, owner: 'o', ttl: 1_000, expiresAt: 1_000 }
    const s = new LocalStore({ clock: new ManualClock(), quota: q, initial: { revision: 2, entries: [lock, { key: 'b', value: 'y'.repeat(100), revision: 2, created: 2 }] } })
    expect(q.used).toBeGreaterThan(q.maxBytes)
    expect(s.commit([{ key: 'lock', created: 1 }], [{ type: 'set', key: 'lock', value: 'x'.repeat(100), owner: 'o', ttl: 1_000 }]).ok).toBe(true)
    expect(s.commit([], [set('b', 'short')]).ok).toBe(true)
    expect(() => s.commit([], [set('c', 1)])).toThrow(expect.objectContaining({ code: 'TOO_LARGE' }))
    expect(s.commit([], [{ type: 'delete', key: 'b' }]).ok).toBe(true)
  })
})

describe('the history kept', () => {
  const compacted = (s: LocalStore, from: number) => collect(s, '', from).errors.map((e) => (e as Error & { code?: string }).code)

  test('at most historySize events: a watch from before them is COMPACTED, one from within replays', () => {
    const s = new LocalStore({ clock: new ManualClock(), historySize: 2 })
    for (let i = 0; i < 3; i++) s.commit([], [set('k', i)])
    expect(compacted(s, 0)).toEqual(['COMPACTED'])
    expect(collect(s, '', 1).events.map((e) => e.revision)).toEqual([2, 3])
  })

  test('10 000 events when historySize is not given', () => {
    const s = new LocalStore({ clock: new ManualClock() })
    for (let i = 0; i < 10_000; i++) s.commit([], [set('k', i)])
    expect(compacted(s, 0)).toEqual([])
    s.commit([], [set('k', 'one more')])
    expect(compacted(s, 0)).toEqual(['COMPACTED'])
  })

  test('at most historyBytes of events, and within a budget shared with other stores', () => {
    const big = 'x'.repeat(1_000)
    const s = new LocalStore({ clock: new ManualClock(), historyBytes: 3_000 })
    for (let i = 0; i < 3; i++) s.commit([], [set('k', big)])
    expect(compacted(s, 0)).toEqual(['COMPACTED'])
    const budget = new LogBudget(3_000)
    const a = new LocalStore({ clock: new ManualClock(), historyBudget: budget })
    const b = new LocalStore({ clock: new ManualClock(), historyBudget: budget })
    a.commit([], [set('k', big)])
    expect(compacted(a, 0)).toEqual([])
    for (let i = 0; i < 2; i++) b.commit([], [set('k', big)])
    // b's events pushed a's oldest out of the shared budget.
    expect(compacted(a, 0)).toEqual(['COMPACTED'])
    expect(budget.used).toBeLessThanOrEqual(3_000)
  })
})

describe('the expiry timer', () => {
  test('one timer at a time, moved earlier by an earlier deadline; expiries come on it without any read', async () => {
    const clock = new ManualClock()
    const s = new LocalStore({ clock })
    const w = collect(s)
    s.commit([], [set('late', 1, 1_000)])
    expect(clock.pending).toBe(1)
    s.commit([], [set('early', 2, 100)])
    s.commit([], [set('same', 3, 100)])
    expect(clock.pending).toBe(1)
    await clock.advance(100)
    expect(w.events.slice(3)).toEqual([
      { type: 'expire', key: 'early', revision: 4 },
      { type: 'expire', key: 'same', revision: 5 },
    ])
    expect(clock.pending).toBe(1)
    await clock.advance(900)
    expect(w.events.at(-1)).toEqual({ type: 'expire', key: 'late', revision: 6 })
    expect(clock.pending).toBe(0)
  })

  test('an expiry whose write fails is tried again by the timer a second later, with no read to prompt it', async () => {
    const disk = arrayDisk()
    const clock = new ManualClock()
    const s = new LocalStore({ clock, persistence: disk.persistence })
    const w = collect(s)
    s.commit([], [set('a', 1, 100)])
    disk.failing = true
    await clock.advance(100)
    expect(w.events).toHaveLength(1)
    expect(clock.pending).toBe(1)
    disk.failing = false
    await clock.advance(999)
    expect(w.events).toHaveLength(1)
    await clock.advance(1)
    expect(w.events.at(-1)).toEqual({ type: 'expire', key: 'a', revision: 2 })
    expect(disk.writes.at(-1)).toEqual({ revision: 2, puts: [], deletes: ['a'] })
    expect(clock.pending).toBe(0)
  })

  test('close stops the timer and ends every watch with CLOSED', async () => {
    const clock = new ManualClock()
    const s = new LocalStore({ clock })
    const w = collect(s)
    s.commit([], [set('a', 1, 100)])
    s.close()
    expect(clock.pending).toBe(0)
    expect(w.errors).toEqual([expect.objectContaining({ code: 'CLOSED' })])
    await clock.advance(200)
    expect(w.events).toHaveLength(1)
  })
})

describe('the adapter over a local store', () => {
  test('declares history and serves it; close ends its watches, fails its calls, and calls onClose once', async () => {
    const clock = new ManualClock()
    const s = new LocalStore({ clock })
    let closed = 0
    const adapter = localAdapter('memory', s, () => closed++)
    expect(adapter.capabilities).toEqual({ history: true, commitOnChange: true, keepParked: true, handover: true, orElse: true })
    await adapter.commit([], [set('a', 1)], { seen: 10 })
    expect(s.revision).toBe(11)
    const page = await adapter.history!('', 0, { maxEvents: 10, maxBytes: 1e6 })
    expect(page).toMatchObject({ through: 11, more: false, events: [{ key: 'a', revision: 11 }] })
    expect(await adapter.list('', { limit: 1 })).toMatchObject({ more: false, entries: [{ key: 'a' }] })
    const errors: Error[] = []
    const events: WatchEvent[] = []
    await adapter.watch('', { event: (e) => events.push(e), error: (e) => errors.push(e) })
    await adapter.close()
    await adapter.close()
    expect(closed).toBe(1)
    // The store lives on for others; this adapter's watch heard nothing more.
    s.commit([], [set('b', 2)])
    expect(events).toEqual([])
    await expect(adapter.get('a')).rejects.toMatchObject({ code: 'CLOSED' })
    await expect(adapter.history!('', 0, { maxEvents: 10, maxBytes: 1e6 })).rejects.toMatchObject({ code: 'CLOSED' })
  })

  test('an adapter without onClose closes too', async () => {
    const adapter = localAdapter('memory', new LocalStore({ clock: new ManualClock() }))
    await adapter.close()
    await expect(adapter.list('')).rejects.toMatchObject({ code: 'CLOSED' })
  })
})

describe('tombstones stay bounded', () => {
  // A deleted key's place is kept (local-store.ts's module comment says why); no read can see one, so these count places.
  const bounded = (s: LocalStore) => s.keptKeys - s.size <= Math.max(s.size, 1024)

  test('deleting distinct keys one by one never keeps more tombstones than max(live entries, 1 024)', () => {
    const s = new LocalStore({ clock: new ManualClock(), historySize: 10 })
    s.commit([], Array.from({ length: 100 }, (_, i) => set(`live/${i}`, i)))
    for (let i = 0; i < 5_000; i++) {
      s.commit([], [set(`job/${i}`, i)])
      s.commit([{ key: `job/${i}`, revision: s.revision }], [{ type: 'delete', key: `job/${i}` }])
      if (!bounded(s)) throw new Error(`after ${i + 1} deletes: ${s.keptKeys} places for ${s.size} entries`)
    }
    expect(s.keptKeys).toBeLessThanOrEqual(100 + 1024)
    expect(s.size).toBe(100)
  })

  test('the places are dropped only past that bound: up to max(live entries, 1 024) tombstones stay, so a key deleted and written again reuses its place', () => {
    const s = new LocalStore({ clock: new ManualClock(), historySize: 10 })
    s.commit([], Array.from({ length: 1_100 }, (_, i) => set(`k/${i}`, i)))
    // 1 024 tombstones and 76 live entries: at the bound, kept.
    s.commit([], Array.from({ length: 1_024 }, (_, i) => ({ type: 'delete', key: `k/${i}` }) as Op))
    expect([s.size, s.keptKeys]).toEqual([76, 1_100])
    s.commit([], [set('k/0', 'again')])
    expect([s.size, s.keptKeys]).toEqual([77, 1_100])
    // One past it: the Map is rebuilt with the live entries only.
    s.commit([], [{ type: 'delete', key: 'k/0' }, { type: 'delete', key: 'k/1099' }])
    expect([s.size, s.keptKeys]).toEqual([75, 75])
    // Above 1 024 live entries the bound is their count: 1 037 tombstones stay beside 1 038 live entries, 1 038 beside 1 037 do not.
    s.commit([], Array.from({ length: 2_000 }, (_, i) => set(`m/${i}`, i)))
    s.commit([], Array.from({ length: 1_037 }, (_, i) => ({ type: 'delete', key: `m/${i}` }) as Op))
    expect([s.size, s.keptKeys]).toEqual([1_038, 2_075])
    s.commit([], [{ type: 'delete', key: 'm/1037' }])
    expect([s.size, s.keptKeys]).toEqual([1_037, 1_037])
  })

  test('expiries of distinct keys leave no more tombstones than that either', async () => {
    const clock = new ManualClock()
    const s = new LocalStore({ clock, historySize: 10 })
    // 30 deadlines, 100 keys each: one timer each (ManualClock settles after every timer).
    for (let i = 0; i < 3_000; i++) s.commit([], [set(`lease/${i}`, i, 100 * (1 + (i % 30)))])
    for (let t = 0; t < 3_000; t += 100) {
      await clock.advance(100)
      expect(bounded(s)).toBe(true)
    }
    expect(s.size).toBe(0)
    expect(s.keptKeys).toBeLessThanOrEqual(1024)
  })
})
