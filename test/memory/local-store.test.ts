/**
 * The LocalStore kernel (memory adapter, SQLite node) keeps a deleted key's
 * Map slot as a tombstone and rebuilds the Map once tombstones outnumber the
 * live entries; stale expiry items are dropped in bulk the same way. These
 * tests drive it past those rebuilds (more than 1 024 deletes) and check that
 * a tombstone reads as absent everywhere: get, list, size, checks, expiry,
 * persistence and the watch log, including replays that span a rebuild.
 */
import { describe, expect, test } from 'vitest'
import type { Entry, Op, WatchEvent } from 'zaris'
import { LocalStore, StoreQuota } from '../../src/adapters/kit/local-store'
import { arrayDisk, type Write } from './array-disk'
import type { Stored } from '../../src/adapters/kit/write'
import { ManualClock } from 'zaris/testing'
import type { Clock, TimerHandle } from '../../src/core/time/clock'

function store(options: { history?: number; writes?: Write[] } = {}) {
  const clock = new ManualClock()
  const s = new LocalStore({
    clock,
    historySize: options.history ?? 100_000,
    persistence: options.writes && { write: (revision, puts, deletes) => options.writes!.push({ revision, puts, deletes }) },
  })
  return { clock, s }
}

function collect(s: LocalStore, prefix = '', from?: number): WatchEvent[] {
  const events: WatchEvent[] = []
  s.watch(prefix, { event: (ev) => events.push(ev), error: (err) => events.push({ type: 'delete', key: `ERROR ${err.message}`, revision: -1 }) }, from)
  return events
}

function ok(s: LocalStore, checks: Parameters<LocalStore['commit']>[0], ops: Op[]) {
  const r = s.commit(checks, ops)
  if (!r.ok) throw new Error(`commit failed: ${JSON.stringify(r.failed)}`)
  return r
}

const set = (key: string, value: string, ttl?: number): Op => (ttl === undefined ? { type: 'set', key, value } : { type: 'set', key, value, ttl })
const del = (key: string): Op => ({ type: 'delete', key })

/** Fills `n` keys, 500 per commit. */
function fill(s: LocalStore, n: number, ttl?: number, prefix = 'k:'): void {
  for (let i = 0; i < n; i += 500) {
    const ops: Op[] = []
    for (let j = i; j < Math.min(n, i + 500); j++) ops.push(set(`${prefix}${j}`, `v${j}`, ttl))
    ok(s, [], ops)
  }
}

function deleteRange(s: LocalStore, from: number, to: number, prefix = 'k:'): void {
  for (let i = from; i < to; i += 500) {
    const ops: Op[] = []
    for (let j = i; j < Math.min(to, i + 500); j++) ops.push(del(`${prefix}${j}`))
    ok(s, [], ops)
  }
}

/**
 * A clock whose `advance` fires due timers synchronously: the random test
 * moves time thousands of times, and ManualClock's settling turns of the
 * real event loop after each timer would take most of a minute.
 */
class SyncClock implements Clock {
  #now = 0
  #seq = 0
  #timers = new Map<number, { at: number; fn: () => void }>()
  now(): number {
    return this.#now
  }
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = ++this.#seq
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn })
    return id as unknown as TimerHandle
  }
  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as unknown as number)
  }
  advance(ms: number): void {
    const target = this.#now + ms
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined
      for (const t of this.#timers) if (t[1].at <= target && (!next || t[1].at < next[1].at)) next = t
      if (!next) break
      this.#timers.delete(next[0])
      this.#now = Math.max(this.#now, next[1].at)
      next[1].fn()
    }
    this.#now = target
  }
}

describe('LocalStore tombstones', () => {
  test('a deleted key is absent from get, list, size and checks, and comes back with a fresh life', () => {
    const { s } = store()
    ok(s, [], [set('a', '1'), set('b', '2')])
    const del1 = ok(s, [{ key: 'a', revision: 1 }], [del('a')])
    expect(del1.deleted).toEqual(['a'])
    expect(s.get('a')).toBeUndefined()
    expect(s.list('').entries).toEqual([expect.objectContaining({ key: 'b' })])
    expect(s.size).toBe(1)
    // A check that the key is absent holds; one that it exists fails and reports no entry.
    expect(s.commit([{ key: 'a', revision: null }], []).ok).toBe(true)
    expect(s.commit([{ key: 'a', created: null }], []).ok).toBe(true)
    const failed = s.commit([{ key: 'a', revision: 1 }], [])
    expect(failed).toEqual({ ok: false, failed: [{ key: 'a', entry: undefined }] })
    // Deleting it again deletes nothing.
    expect(ok(s, [], [del('a')]).deleted).toEqual([])
    const again = ok(s, [{ key: 'a', revision: null }], [set('a', '3')])
    expect(again.entries[0]).toMatchObject({ key: 'a', value: '3', created: again.revision, revision: again.revision })
    expect(s.get('a')).toMatchObject({ value: '3', created: again.revision })
    expect(s.list('').entries.map((e) => e.key)).toEqual(['a', 'b'])
    expect(s.size).toBe(2)
  })

  test('release + acquire of one key many times among many others keeps every count right', () => {
    const { s } = store({ history: 10 })
    fill(s, 2000)
    let created = 0
    for (let i = 0; i < 5000; i++) {
      const r = ok(s, [{ key: 'lock', revision: null }], [set('lock', `h${i}`, 30_000)])
      created = r.entries[0]!.created
      if (s.size !== 2001 || s.get('lock')?.value !== `h${i}`) throw new Error(`round ${i}: size ${s.size}, lock ${JSON.stringify(s.get('lock'))}`)
      ok(s, [{ key: 'lock', created }], [del('lock')])
    }
    expect(s.size).toBe(2000)
    expect(s.get('lock')).toBeUndefined()
    expect(s.list('lock').entries).toEqual([])
    expect(s.get('k:1999')).toMatchObject({ value: 'v1999' })
  })

  test('entries, checks and lists are right after the Map is rebuilt (more tombstones than live entries)', () => {
    const { s } = store()
    fill(s, 3000)
    deleteRange(s, 0, 2500) // 2 500 tombstones against 500 live: rebuilt
    expect(s.size).toBe(500)
    expect(s.get('k:0')).toBeUndefined()
    expect(s.get('k:2499')).toBeUndefined()
    expect(s.get('k:2500')).toMatchObject({ key: 'k:2500', value: 'v2500' })
    expect(s.list('k:').entries.map((e) => e.key)).toEqual(Array.from({ length: 500 }, (_, i) => `k:${2500 + i}`).sort())
    // A deleted key can be created again, a live one cannot.
    expect(s.commit([{ key: 'k:10', revision: null }], [set('k:10', 'again')]).ok).toBe(true)
    expect(s.commit([{ key: 'k:2600', revision: null }], [set('k:2600', 'no')]).ok).toBe(false)
    expect(s.get('k:10')).toMatchObject({ value: 'again' })
    expect(s.get('k:2600')).toMatchObject({ value: 'v2600' })
    expect(s.size).toBe(501)
    // Rebuild again from a state that mixes re-created and never-deleted keys.
    deleteRange(s, 2500, 3000)
    for (let i = 0; i < 2000; i++) ok(s, [], [set(`n:${i}`, 'x')])
    for (let i = 0; i < 2000; i++) ok(s, [], [del(`n:${i}`)])
    expect(s.size).toBe(1)
    expect(s.list('').entries.map((e) => [e.key, e.value])).toEqual([['k:10', 'again']])
  })

  test('a watch replay from before a rebuild sees every event, in order, as a live watch did', () => {
    const { s } = store()
    fill(s, 1500)
    const from = s.revision
    const live = collect(s, 'k:')
    deleteRange(s, 0, 1400) // rebuilt
    ok(s, [], [set('k:5', 'back')])
    ok(s, [], [del('k:1450')])
    const replay = collect(s, 'k:', from)
    expect(replay).toEqual(live)
    expect(replay.filter((e) => e.type === 'delete')).toHaveLength(1401)
    expect(replay.at(-2)).toMatchObject({ type: 'put', key: 'k:5', value: 'back', created: s.revision - 1 })
    expect(replay.at(-1)).toMatchObject({ type: 'delete', key: 'k:1450', revision: s.revision })
    // Replaying the events over the state at `from` gives the state now.
    const state = new Map(Array.from({ length: 1500 }, (_, i) => [`k:${i}`, `v${i}`]))
    for (const e of replay) e.type === 'put' ? state.set(e.key, e.value as string) : state.delete(e.key)
    expect(s.list('k:').entries.map((e) => [e.key, e.value])).toEqual([...state].sort((a, b) => (a[0] < b[0] ? -1 : 1)))
  })

  test('put events built lazily carry the same fields live and in a replay, and are copies', () => {
    const { s } = store()
    const live = collect(s, 'w:')
    ok(s, [], [set('w:gone', 'x')])
    const r = ok(s, [], [{ type: 'delete', key: 'w:gone' }, { type: 'set', key: 'w:obj', value: { a: [1] }, ttl: 5_000, owner: 'me' }, set('w:plain', 'p')])
    // An unwatched commit: its event is built only by the replay below.
    ok(s, [], [{ type: 'set', key: 'w:late', value: { b: 2 }, owner: 'o2' }])
    const replay = collect(s, 'w:', 0)
    const want = [
      { type: 'put', key: 'w:gone', revision: 1, value: 'x', created: 1 },
      { type: 'delete', key: 'w:gone', revision: r.revision },
      { type: 'put', key: 'w:obj', revision: r.revision, value: { a: [1] }, created: r.revision, owner: 'me', ttl: 5_000 },
      { type: 'put', key: 'w:plain', revision: r.revision, value: 'p', created: r.revision },
      { type: 'put', key: 'w:late', revision: r.revision + 1, value: { b: 2 }, created: r.revision + 1, owner: 'o2' },
    ]
    expect(live).toEqual(want)
    expect(replay).toEqual(want)
    // A watcher that mutates what it was given changes neither the store nor what others get.
    ;(live[2]!.value as { a: number[] }).a.push(2)
    ;(replay[4]!.value as { b: number }).b = 3
    expect(s.get('w:obj')!.value).toEqual({ a: [1] })
    expect(collect(s, 'w:', 0)).toEqual(want)
  })

  test('a key re-set after a rebuild expires on its new TTL, not on its old one', async () => {
    const { s, clock } = store()
    const events = collect(s, 'lock')
    ok(s, [], [set('lock', 'old', 100)])
    ok(s, [], [del('lock')])
    fill(s, 3000)
    deleteRange(s, 0, 3000) // rebuilt
    ok(s, [], [set('lock', 'new', 500)])
    await clock.advance(200) // past the old write's deadline
    expect(s.get('lock')).toMatchObject({ value: 'new', ttl: 300 })
    await clock.advance(299)
    expect(s.get('lock')).toMatchObject({ value: 'new', ttl: 1 })
    await clock.advance(1)
    expect(s.get('lock')).toBeUndefined()
    expect(s.size).toBe(0)
    expect(events.map((e) => `${e.type} ${e.value ?? ''}`.trim())).toEqual(['put old', 'delete', 'put new', 'expire'])
  })

  test('an expiry whose write fails stays due and is written on the next read', async () => {
    const disk = arrayDisk()
    const clock = new ManualClock()
    const s = new LocalStore({ clock, persistence: disk.persistence })
    ok(s, [], [set('a', '1', 100), set('b', '2', 200)])
    disk.failing = true
    await clock.advance(150) // the timer's attempt fails, quietly
    expect(() => s.get('a')).toThrow('disk full')
    expect(disk.writes).toHaveLength(1)
    disk.failing = false
    expect(s.get('a')).toBeUndefined()
    expect(s.get('b')).toMatchObject({ value: '2' })
    expect(disk.writes.at(-1)).toEqual({ revision: 2, puts: [], deletes: ['a'] })
    await clock.advance(50)
    expect(s.size).toBe(0)
    expect(disk.writes.at(-1)).toEqual({ revision: 3, puts: [], deletes: ['b'] })
  })

  test('a key written without a TTL after one with it does not expire on the old deadline', async () => {
    const { s, clock } = store()
    ok(s, [], [set('a', '1', 100)])
    ok(s, [], [del('a')])
    ok(s, [], [set('a', '2')])
    await clock.advance(1000)
    expect(s.get('a')).toMatchObject({ value: '2' })
    expect(s.get('a')!.ttl).toBeUndefined()
  })

  test('many renewals of one TTL key (each moves its heap item) expire it on its last deadline, the others on theirs', async () => {
    const { s, clock } = store({ history: 10 })
    fill(s, 100, 10_000, 'other:')
    for (let i = 0; i < 5000; i++) ok(s, [], [set('lease', `r${i}`, 1_000)])
    await clock.advance(999)
    expect(s.get('lease')).toMatchObject({ value: 'r4999', ttl: 1 })
    expect(s.size).toBe(101)
    await clock.advance(1)
    expect(s.get('lease')).toBeUndefined()
    await clock.advance(8_999)
    expect(s.size).toBe(100)
    await clock.advance(1)
    expect(s.size).toBe(0)
    expect(s.list('').entries).toEqual([])
  })

  test('expiries across a rebuild are written through persistence once each, and only for live keys', async () => {
    const writes: Write[] = []
    const { s, clock } = store({ writes })
    fill(s, 2000, 1_000)
    ok(s, [], [set('keep', 'x')])
    deleteRange(s, 0, 1900) // rebuilt; 100 TTL keys left
    ok(s, [], [del('k:5')]) // already gone: nothing to write
    expect(writes.at(-1)).toMatchObject({ deletes: [] })
    const before = writes.length
    await clock.advance(1_000)
    const expiries = writes.slice(before)
    expect(expiries.map((w) => w.deletes).flat().sort()).toEqual(Array.from({ length: 100 }, (_, i) => `k:${1900 + i}`).sort())
    expect(expiries.every((w) => w.puts.length === 0 && w.deletes.length === 1)).toBe(true)
    expect(s.list('').entries.map((e) => e.key)).toEqual(['keep'])
  })

  test('random commits, deletes and expiries agree with a plain model through many rebuilds', () => {
    const clock = new SyncClock()
    const s = new LocalStore({ clock, historySize: 1_000_000 })
    const all = collect(s)
    const model = new Map<string, { value: string; revision: number; created: number; expiresAt?: number }>()
    // mulberry32: a seeded generator, so a failure replays.
    let seed = 7
    const rand = (n: number) => {
      seed = (seed + 0x6d2b79f5) | 0
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
      return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n)
    }
    const expire = () => {
      for (const [k, e] of model) if (e.expiresAt !== undefined && e.expiresAt <= clock.now()) model.delete(k)
    }
    const compare = () => {
      const want = [...model].map(([key, e]) => ({ key, value: e.value, revision: e.revision, created: e.created })).sort((a, b) => (a.key < b.key ? -1 : 1))
      expect(s.list('').entries.map(({ key, value, revision, created }: Entry) => ({ key, value, revision, created }))).toEqual(want)
      expect(s.size).toBe(model.size)
    }
    const POOL = 4000
    for (let round = 0; round < 8; round++) {
      // Rounds alternate between mostly writing and mostly deleting, so tombstones pile up and get dropped.
      const deleting = round % 2 === 1
      for (let i = 0; i < 3000; i++) {
        const key = `r:${rand(POOL)}`
        const kind = rand(10)
        if (deleting ? kind < 9 : kind < 2) {
          const had = model.has(key)
          const r = ok(s, [], [del(key)])
          // A plain check: expect() on every one of thousands of commits would dominate the test's time.
          if (r.deleted.length !== (had ? 1 : 0)) throw new Error(`delete ${key}: deleted ${JSON.stringify(r.deleted)}, the model had it: ${had}`)
          model.delete(key)
        } else {
          const ttl = kind === 9 ? 50 + rand(500) : undefined
          const existing = model.get(key)
          const r = ok(s, [{ key, revision: existing ? existing.revision : null }], [set(key, `v${i}`, ttl)])
          model.set(key, { value: `v${i}`, revision: r.revision, created: existing ? existing.created : r.revision, ...(ttl === undefined ? {} : { expiresAt: clock.now() + ttl }) })
        }
        if (i % 100 === 0) {
          clock.advance(rand(60))
          expire()
          expect(s.get(key)?.value).toBe(model.get(key)?.value)
        }
      }
      compare()
    }
    clock.advance(1000)
    expire()
    compare()
    // The live watch saw every change: replaying it from nothing gives the same state.
    const state = new Map<string, string>()
    let last = 0
    for (const e of all) {
      expect(e.revision).toBeGreaterThan(last)
      last = e.revision
      e.type === 'put' ? state.set(e.key, e.value as string) : state.delete(e.key)
    }
    expect([...state].sort()).toEqual([...model].map(([k, e]) => [k, e.value]).sort())
    // And a replay from revision 0 equals the live watch.
    expect(collect(s, '', 0)).toEqual(all)
  })
})

describe('store quota', () => {
  test('a commit that would grow the entries past the quota is refused whole; shrinking and same-size commits go through; expiry and deletes free room', async () => {
    const clock = new ManualClock()
    const quota = new StoreQuota(20_000)
    const a = new LocalStore({ clock, quota })
    const b = new LocalStore({ clock, quota })
    const v = (n: number) => 'x'.repeat(n)
    for (let i = 0; i < 4; i++) a.commit([], [{ type: 'set', key: `a/${i}`, value: v(2_000) }])
    b.commit([], [{ type: 'set', key: 'b/lock', value: null, owner: 'me', ttl: 1_000 }])
    const before = quota.used
    expect(before).toBeGreaterThan(16_000)
    // The two stores share it: b's growth is refused, and nothing of the commit is written.
    const revision = b.revision
    expect(() => b.commit([], [{ type: 'set', key: 'b/small', value: 1 }, { type: 'set', key: 'b/big', value: v(2_000) }])).toThrow(
      expect.objectContaining({ code: 'TOO_LARGE', message: expect.stringMatching(/store is full.*--max-store-bytes/) }),
    )
    expect(b.revision).toBe(revision)
    expect(b.get('b/small')).toBeUndefined()
    expect(quota.used).toBe(before)
    // A renewal of the lock (same size), an overwrite with a smaller value, and a delete all go through.
    b.commit([{ key: 'b/lock', revision }], [{ type: 'set', key: 'b/lock', value: null, owner: 'me', ttl: 1_000 }])
    a.commit([], [{ type: 'set', key: 'a/0', value: v(10) }])
    a.commit([], [{ type: 'delete', key: 'a/1' }])
    expect(quota.used).toBeLessThan(before - 7_000)
    b.commit([], [{ type: 'set', key: 'b/big', value: v(2_000) }])
    // The lock's expiry gives its bytes back.
    const withLock = quota.used
    await clock.advance(2_000)
    expect(b.get('b/lock')).toBeUndefined()
    expect(quota.used).toBeLessThan(withLock)
    a.close()
    b.close()
  })
})

