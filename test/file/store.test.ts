/**
 * The `file://` store's own promises, on real files, with the store's clock
 * in the test's hand (ManualClock) where time matters: one reading of the
 * clock per transaction, expiry reported once whichever connection gets
 * there, tokens that never repeat (the reservation, a reboot), request ids,
 * the log's bounds, a file another process keeps locked, damaged rows and
 * bad options.
 */
import Database from 'better-sqlite3'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test, vi } from 'vitest'
import { ManualClock } from 'zaris/testing'
import { fileAdapter } from 'zaris/file'
import { collect, newFile, open, raw, REVISION, until } from './helpers'

const set = (key: string, value: unknown = 1, more: Record<string, unknown> = {}) => ({ type: 'set' as const, key, value: value as null, ...more })

describe('expiry, on the store clock', () => {
  test('an entry is live until its deadline and absent from it on, to reads, lists and checks; its expiry takes a revision', async () => {
    const clock = new ManualClock(1_000)
    const a = await open({ clock })
    const r = await a.commit([], [set('k', 1, { ttl: 100 }), set('other')])
    if (!r.ok) throw new Error('commit failed')
    expect(r.entries[0]).toMatchObject({ key: 'k', ttl: 100, created: r.revision })
    await clock.advance(99)
    expect(await a.get('k')).toMatchObject({ ttl: 1 })
    expect((await a.list('')).entries.map((e) => e.key)).toEqual(['k', 'other'])
    await clock.advance(1)
    expect(await a.get('k')).toBeUndefined()
    expect((await a.list('')).entries.map((e) => e.key)).toEqual(['other'])
    const next = await a.commit([{ key: 'k', revision: null }], [set('k', 2)])
    if (!next.ok) throw new Error('the expired entry was still there for the check')
    // The expiry took the revision between.
    expect(next.revision).toBe(r.revision + 2)
    expect(next.entries[0]!.created).toBe(next.revision)
  })

  test('expired once, whichever of two watching connections gets there first', async () => {
    const clock = new ManualClock(0)
    const path = newFile()
    const [a, b] = [await open({ path, clock }), await open({ path, clock })]
    const [wa, wb] = [collect(), collect()]
    await a.watch('', wa.sink)
    await b.watch('', wb.sink)
    await a.commit([], [set('k', 1, { ttl: 50 })])
    await until(() => wb.events.length === 1)
    await clock.advance(60)
    await until(() => wa.events.length === 2 && wb.events.length === 2)
    await new Promise((r) => setTimeout(r, 50))
    expect(wa.events.map((e) => e.type)).toEqual(['put', 'expire'])
    expect(wb.events).toEqual(wa.events)
    expect(raw(path).prepare(`SELECT count(*) AS n FROM zaris_file_events WHERE type = 'expire'`).get()).toEqual({ n: 1 })
  })

  test('a deadline written by another connection is expired by a watcher\'s timer, with nobody writing', async () => {
    const clock = new ManualClock(0)
    const path = newFile()
    const [a, b] = [await open({ path, clock }), await open({ path, clock })]
    const w = collect()
    await b.watch('', w.sink)
    await a.commit([], [set('late', 1, { ttl: 500 })])
    await a.commit([], [set('soon', 1, { ttl: 100 })])
    await until(() => w.events.length === 2)
    // The timer is set a millisecond past the deadline (a timer may fire a little early).
    await clock.advance(101)
    await until(() => w.events.length === 3)
    expect(w.events[2]).toMatchObject({ type: 'expire', key: 'soon' })
    await clock.advance(400)
    await until(() => w.events.length === 4)
    expect(w.events[3]).toMatchObject({ type: 'expire', key: 'late' })
  })
})

describe('tokens never repeat', () => {
  test('the reservation is raised ahead of the revision, in a transaction synced to disk', async () => {
    const path = newFile()
    const pragma = vi.spyOn(Database.prototype, 'pragma')
    try {
      const a = await open({ path })
      const space = () => raw(path).prepare(`SELECT ${REVISION} AS revision, reserved FROM zaris_file_spaces`).get() as { revision: number; reserved: number }
      pragma.mockClear()
      await a.commit([], [set('a')])
      expect(space()).toEqual({ revision: 1, reserved: 10_001 })
      // A commit below the reservation is not synced...
      pragma.mockClear()
      await a.commit([], [set('b')])
      expect(pragma.mock.calls.map((c) => c[0])).not.toContain('synchronous = FULL')
      // A commit that takes the reserved revision itself is not synced either...
      raw(path).prepare(`UPDATE zaris_file_spaces SET reserved = ${REVISION} + 1`).run()
      pragma.mockClear()
      await a.commit([], [set('at')])
      expect(pragma.mock.calls.map((c) => c[0])).not.toContain('synchronous = FULL')
      expect(space()).toEqual({ revision: 3, reserved: 3 })
      // ...the one that passes it is.
      raw(path).prepare(`UPDATE zaris_file_spaces SET reserved = ${REVISION}`).run()
      pragma.mockClear()
      await a.commit([], [set('c')])
      expect(pragma.mock.calls.map((c) => c[0])).toContain('synchronous = FULL')
      expect(space()).toEqual({ revision: 4, reserved: 10_004 })
    } finally {
      pragma.mockRestore()
    }
  })

  test('sync=full: every commit is synced', async () => {
    const pragma = vi.spyOn(Database.prototype, 'pragma')
    try {
      const a = await open({ sync: 'full' })
      pragma.mockClear()
      for (let i = 0; i < 3; i++) await a.commit([], [set(`k${i}`)])
      // Set to FULL when it opened, and left so.
      expect(pragma.mock.calls.map((c) => c[0]).filter((c) => String(c).startsWith('synchronous'))).toEqual([])
    } finally {
      pragma.mockRestore()
    }
  })

  test.runIf(process.platform === 'linux')('after a reboot: revisions go on above the reservation, TTLs start again whole, the old boot\'s owners are gone', async () => {
    const path = newFile()
    const before = await open({ path, clock: new ManualClock(5_000) })
    await before.commit([], [set('ttl', 1, { ttl: 1_000 }), set('plain')])
    await before.close()
    const db = raw(path)
    // As a file last opened in another boot: a reservation above the revision, a registered owner of that boot with a lock.
    db.prepare(`UPDATE zaris_file_meta SET value = 'another-boot' WHERE name = 'boot'`).run()
    db.prepare('UPDATE zaris_file_spaces SET reserved = 500').run()
    db.prepare(`INSERT INTO zaris_file_owners VALUES ('test', 'ghost', 'n1', 4242, '77', 'another-boot/pid:[1]')`).run()
    db.prepare(`INSERT INTO zaris_file_entries VALUES ('test', ?, 'null', 2, 2, 'ghost', 30000, 35000)`).run(Buffer.from('lock', 'utf16le').swap16())
    const clock = new ManualClock(10) // the clock restarted with the machine
    const after = await open({ path, clock })
    expect(await after.get('ttl')).toMatchObject({ ttl: 1_000 })
    expect(await after.get('lock')).toBeUndefined()
    const r = await after.commit([], [set('next')])
    expect(r.ok && r.revision).toBeGreaterThan(500)
    const events = db.prepare(`SELECT type, key, revision FROM zaris_file_events WHERE revision > 2 ORDER BY revision`).all()
    expect(events).toEqual([
      { type: 'expire', key: 'lock', revision: 501 },
      { type: 'put', key: 'next', revision: 502 },
    ])
    expect(db.prepare('SELECT count(*) AS n FROM zaris_file_owners').get()).toEqual({ n: 0 })
    expect(db.prepare(`SELECT value FROM zaris_file_meta WHERE name = 'boot'`).get()).not.toEqual({ value: 'another-boot' })
    // Opened again in the same boot: nothing moves.
    const again = await open({ path, clock })
    expect(await again.get('ttl')).toMatchObject({ ttl: 1_000 })
    expect(await again.commit([], [set('x')])).toMatchObject({ ok: true, revision: 503 })
  })
})

describe('commits', () => {
  test('a commit answers a written entry with its own ttl, whatever fraction the store clock has (84 935.27 + 60 000 - 84 935.27 is not 60 000 in floating point)', async () => {
    const a = await open({ clock: new ManualClock(84_935.27) })
    const r = await a.commit([], [set('k', 1, { ttl: 60_000 })])
    expect(r.ok && r.entries[0]!.ttl).toBe(60_000)
  })

  test('a commit retried with its request id is answered, not applied again', async () => {
    const a = await open()
    const first = await a.commit([{ key: 'k', revision: null }], [set('k', 1, { owner: 'o', ttl: 60_000 }), { type: 'delete', key: 'none' }], { requestId: 'r1' })
    const again = await a.commit([{ key: 'k', revision: null }], [set('k', 1, { owner: 'o', ttl: 60_000 })], { requestId: 'r1' })
    expect(again).toEqual(first)
    const empty = await a.commit([], [], { requestId: 'r2' })
    expect(await a.commit([], [], { requestId: 'r2' })).toEqual(empty)
    const del = await a.commit([], [{ type: 'delete', key: 'k' }], { requestId: 'r3' })
    expect(del).toMatchObject({ ok: true, deleted: ['k'] })
    expect(await a.commit([], [{ type: 'delete', key: 'k' }], { requestId: 'r3' })).toEqual(del)
    const next = await a.commit([], [set('z')])
    expect(next.ok && first.ok && empty.ok && del.ok && [first.revision, empty.revision, del.revision, next.revision]).toEqual([1, 2, 3, 4])
  })

  test('a file another process keeps locked: a commit waits for it, without blocking the loop, or fails UNAVAILABLE past the limit', async () => {
    const path = newFile()
    const a = await open({ path, busyLimitMs: 300 })
    const other = raw(path)
    other.pragma('busy_timeout = 0')
    other.exec('BEGIN IMMEDIATE')
    let ticks = 0
    const ticker = setInterval(() => ticks++, 10)
    const waiting = a.commit([], [set('k')])
    await new Promise((r) => setTimeout(r, 150))
    other.exec('COMMIT')
    expect((await waiting).ok).toBe(true)
    // A loop blocked by the wait would tick at most once (after it); under load timers run late, so a few suffice.
    expect(ticks).toBeGreaterThan(2)
    other.exec('BEGIN IMMEDIATE')
    await expect(a.commit([], [set('k')])).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/stayed locked by another process's write for 300 ms/) })
    other.exec('COMMIT')
    clearInterval(ticker)
  })

  test('a damaged row is refused naming the file, the namespace and the key', async () => {
    const path = newFile()
    const a = await open({ path })
    raw(path).prepare(`INSERT INTO zaris_file_entries VALUES ('test', ?, '{oops', 1, 1, NULL, NULL, NULL)`).run(Buffer.from('bad', 'utf16le').swap16())
    await expect(a.get('bad')).rejects.toMatchObject({ code: 'INTERNAL', message: expect.stringContaining(`${path}: namespace "test", entry key "bad": its value is not JSON`) })
  })
})

describe('reads', () => {
  test('list: UTF-16 code unit order, pages after a key, a prefix up to its last unit', async () => {
    const a = await open()
    const keys = ['a', 'a\uffff', 'a\uffffb', 'b', '\ud83d\ude00', '\ufffd', 'ab']
    await a.commit([], keys.map((k) => set(k)))
    expect((await a.list('')).entries.map((e) => e.key)).toEqual([...keys].sort())
    expect((await a.list('a\uffff')).entries.map((e) => e.key)).toEqual(['a\uffff', 'a\uffffb'])
    const first = await a.list('a', { limit: 2 })
    expect(first).toMatchObject({ more: true })
    expect(first.entries.map((e) => e.key)).toEqual(['a', 'ab'])
    const second = await a.list('a', { after: 'ab', limit: 2 })
    expect(second.entries.map((e) => e.key)).toEqual(['a\uffff', 'a\uffffb'])
    expect(second.more).toBe(false)
    expect((await a.list('c')).entries).toEqual([])
  })

  test('history: pages cut between revisions; from before the pruned log, COMPACTED', async () => {
    const a = await open({ historySize: 3 })
    await a.commit([], [set('h/a'), set('h/b')])
    await a.commit([], [set('x')])
    await a.commit([], [{ type: 'delete', key: 'h/a' }])
    const page = await a.history!('h/', 0, { maxEvents: 1, maxBytes: 1 << 20 })
    expect(page).toMatchObject({ through: 1, more: true })
    expect(page.events.map((e) => e.key)).toEqual(['h/a', 'h/b'])
    const rest = await a.history!('h/', 1, { maxEvents: 10, maxBytes: 1 << 20 })
    expect(rest).toMatchObject({ through: 3, more: false })
    expect(rest.events.map((e) => [e.type, e.key])).toEqual([['delete', 'h/a']])
    // Past the log's bound plus a thousand, the old events go.
    for (let i = 0; i < 1_005; i++) await a.commit([], [set('n', i)])
    await expect(a.history!('', 1, { maxEvents: 10, maxBytes: 1 << 20 })).rejects.toMatchObject({ code: 'COMPACTED' })
    const w = collect()
    await a.watch('', w.sink, 1)
    expect(w.errors[0]).toMatchObject({ code: 'COMPACTED' })
    const recent = collect()
    await a.watch('', recent.sink, 1_006)
    expect(recent.events.map((e) => e.revision)).toEqual([1_007, 1_008])
  })
})

describe('opening', () => {
  test('bad options are refused before anything is opened', async () => {
    await expect(fileAdapter(null as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(fileAdapter({ path: '', namespace: 'x' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/path must name a file/) })
    await expect(fileAdapter({ path: 'a\0b', namespace: 'x' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(fileAdapter({ path: newFile(), namespace: 'a b' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/namespace must be/) })
    await expect(fileAdapter({ path: newFile(), namespace: 'x', sync: 'off' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/sync must be/) })
    await expect(fileAdapter({ path: newFile(), namespace: 'x', historySize: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/historySize/) })
  })

  test('a folder that does not exist, a node\'s data file, a newer schema: refused with the reason', async () => {
    await expect(fileAdapter({ path: join(newFile(), 'no', 'such.db'), namespace: 'x' })).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/cannot open .*its folder must exist/) })
    const node = newFile()
    new Database(node).exec('CREATE TABLE zaris_stores (ns TEXT)')
    await expect(fileAdapter({ path: node, namespace: 'x' })).rejects.toMatchObject({ code: 'UNSUPPORTED', message: expect.stringMatching(/data file of a zaris node/) })
    const newer = newFile()
    const a = await open({ path: newer })
    await a.close()
    raw(newer).prepare(`UPDATE zaris_file_meta SET value = '99' WHERE name = 'schema'`).run()
    await expect(fileAdapter({ path: newer, namespace: 'x' })).rejects.toMatchObject({ code: 'UNSUPPORTED', message: expect.stringMatching(/newer zaris \(file store schema 99; this one reads 3\)/) })
    const text = newFile()
    writeFileSync(text, 'not a database, just text of some length '.repeat(100))
    await expect(fileAdapter({ path: text, namespace: 'x' })).rejects.toMatchObject({ code: 'UNAVAILABLE' })
  })

  test('a file of schema 1 (its revision in the namespace row, no `none` rows) opens as schema 3 and goes on above that revision', async () => {
    const path = newFile()
    await (await open({ path })).close()
    const db = raw(path)
    // As schema 1 left it: a commit that wrote no event, its revision only in the row.
    db.prepare(`UPDATE zaris_file_meta SET value = '1' WHERE name = 'schema'`).run()
    db.prepare('UPDATE zaris_file_spaces SET revision = 41, reserved = 10041').run()
    const a = await open({ path })
    expect(db.prepare(`SELECT value FROM zaris_file_meta WHERE name = 'schema'`).get()).toEqual({ value: '3' })
    const r = await a.commit([], [set('k')])
    expect(r.ok && r.revision).toBe(42)
  })

  test('a file made with the index of owned entries (before it was dropped) opens without it, and a gone owner\'s entries still end', async () => {
    const path = newFile()
    await (await open({ path })).close()
    const db = raw(path)
    db.exec('CREATE INDEX zaris_file_owned ON zaris_file_entries (ns, owner) WHERE owner IS NOT NULL')
    const a = await open({ path })
    const indexes = () => (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name`).all() as Array<{ name: string }>).map((r) => r.name)
    expect(indexes()).toEqual(['zaris_file_expiry', 'zaris_file_parked_ends', 'zaris_file_parked_nonce', 'zaris_file_parked_requests', 'zaris_file_requests'])
    expect(db.prepare(`SELECT value FROM zaris_file_meta WHERE name = 'schema'`).get()).toEqual({ value: '3' })
    await a.registerOwner!('mine')
    await a.registerOwner!('theirs')
    await a.commit([], [set('k:1', 1, { owner: 'mine' }), set('k:2', 1, { owner: 'theirs' }), set('k:3', 1, { owner: 'mine' }), set('k:4')])
    await a.close()
    // The close ended its clients' registrations: their entries found by scanning the namespace.
    expect(db.prepare(`SELECT type, key FROM zaris_file_events WHERE type = 'expire' ORDER BY revision`).all()).toEqual([
      { type: 'expire', key: 'k:1' }, { type: 'expire', key: 'k:3' }, { type: 'expire', key: 'k:2' },
    ])
    expect(db.prepare('SELECT count(*) AS n FROM zaris_file_entries').get()).toEqual({ n: 1 })
  })

  test('a commit writes its events, not the namespace row: the revision is the last event\'s; the row\'s clock is brought up to date once a second', async () => {
    const path = newFile()
    const clock = new ManualClock(10_000)
    const a = await open({ path, clock })
    const row = () => raw(path).prepare(`SELECT revision, clock, ${REVISION} AS current FROM zaris_file_spaces`).get() as { revision: number; clock: number; current: number }
    await a.commit([], [set('a')]) // the first raises the reservation: the row is written
    expect(row()).toMatchObject({ revision: 1, current: 1, clock: 10_000 })
    await clock.advance(500)
    await a.commit([], [set('b')])
    await a.commit([], [{ type: 'delete', key: 'nothing' }])
    expect(row()).toMatchObject({ revision: 1, current: 3, clock: 10_000 })
    await clock.advance(500)
    expect((await a.commit([], [set('c')])).ok).toBe(true)
    expect(row()).toMatchObject({ revision: 4, current: 4, clock: 11_000 })
  })

  test('opening an existing file again finds what was written; namespaces are stores of their own', async () => {
    const path = newFile()
    const a = await open({ path, namespace: 'one' })
    await a.commit([], [set('k', 'v')])
    await a.close()
    expect((await (await open({ path, namespace: 'one' })).get('k'))?.value).toBe('v')
    expect(await (await open({ path, namespace: 'two' })).get('k')).toBeUndefined()
  })
})

describe('a read and a commit of another process between its clock reading and its snapshot', () => {
  test('the clock is read after the snapshot: an entry another process just wrote never shows more time to live than its TTL', async () => {
    const path = newFile()
    let at = 50_000
    let hook: (() => void) | undefined
    // The store's clock, with a commit of another process slipped in at the reader's next reading of it.
    const clock = { now: () => { const t = at; const h = hook; hook = undefined; h?.(); return t }, setTimeout: (fn: () => void, ms: number) => setTimeout(fn, ms), clearTimeout: (h: unknown) => clearTimeout(h as NodeJS.Timeout) }
    const a = await open({ path, clock: clock as never })
    await a.commit([], [set('other')])
    const other = raw(path)
    const key = Buffer.from('k', 'utf16le').swap16()
    hook = () => {
      at += 7
      // Written at the later reading, with a TTL of 100 ms.
      other.prepare(`INSERT INTO zaris_file_entries VALUES ('test', ?, '1', 2, 2, NULL, 100, ?)`).run(key, at + 100)
    }
    const seen = await a.get('k')
    expect(seen?.ttl).toBe(100)
  })
})
