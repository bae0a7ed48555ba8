/**
 * The `file://` store in detail: what an adapter declares and refuses, the
 * shape of what a commit answers and writes (events in op order within a
 * revision, nothing for an empty commit), the log's bounds to the revision,
 * a store with no revision left, the key order helpers, a zombie process.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { describe, expect, test, vi } from 'vitest'
import { connect } from 'zaris'
import { fileAdapter, parseFileUrl } from 'zaris/file'
import { parseStat, processAlive, thisProcess } from '../../src/adapters/file/machine'
import { keyBytes, keyOf, pastPrefix } from '../../src/adapters/file/schema'
import { collect, newFile, open, raw } from './helpers'

const set = (key: string, value: unknown = 1, more: Record<string, unknown> = {}) => ({ type: 'set' as const, key, value: value as null, ...more })

describe('the adapter', () => {
  test('is named file and declares history, ownerGone and handover; refuses calls once closed, saying so', async () => {
    const a = await open()
    expect(a.name).toBe('file')
    expect(a.capabilities).toEqual({ history: true, ownerGone: true, commitOnChange: true, keepParked: true, handover: true, orElse: true })
    await a.close()
    await expect(a.get('k')).rejects.toMatchObject({ code: 'CLOSED', message: 'the file adapter is closed' })
  })

  test('refuses options that are not an object, a path or namespace that is not a string; takes historySize 1', async () => {
    await expect(fileAdapter('x' as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/needs options/) })
    await expect(fileAdapter({ path: 5 as never, namespace: 'x' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(fileAdapter({ path: newFile(), namespace: 5 as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    const a = await open({ historySize: 1 })
    expect((await a.commit([], [set('k')])).ok).toBe(true)
  })

  test('a call waiting for a locked file when the adapter closes ends with CLOSED', async () => {
    const path = newFile()
    const a = await open({ path })
    const other = raw(path)
    other.pragma('busy_timeout = 0')
    other.exec('BEGIN IMMEDIATE')
    const waiting = a.commit([], [set('k')])
    await new Promise((r) => setTimeout(r, 30))
    const closing = a.close()
    await expect(waiting).rejects.toMatchObject({ code: 'CLOSED' })
    other.exec('COMMIT')
    await closing
  })

  test('a file that cannot be opened: UNAVAILABLE, with the cause', async () => {
    const err = await fileAdapter({ path: '/proc/zaris/no.db', namespace: 'x' }).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'UNAVAILABLE', cause: expect.any(Error) })
  })

  test('the file is in WAL mode, and opened through connect() with sync=full every commit is synced', async () => {
    const path = newFile()
    const pragma = vi.spyOn(Database.prototype, 'pragma')
    try {
      const client = await connect(`file://${path}?ns=x&sync=full`)
      pragma.mockClear()
      await client.put('k', 1)
      await client.put('k', 2)
      expect(pragma.mock.calls.filter((c) => String(c[0]).startsWith('synchronous'))).toEqual([])
      expect(raw(path).pragma('journal_mode', { simple: true })).toBe('wal')
      expect(parseFileUrl(`file://${path}?ns=x&sync=full`).sync).toBe('full')
      await client.close()
    } finally {
      pragma.mockRestore()
    }
  })

  test('opening syncs its first transaction (after a reboot it moves revisions past the reservation)', async () => {
    const pragma = vi.spyOn(Database.prototype, 'pragma')
    try {
      await open()
      expect(pragma.mock.calls.map((c) => c[0])).toContain('synchronous = FULL')
    } finally {
      pragma.mockRestore()
    }
  })

  test('a file whose meta table has lost its schema row is still opened', async () => {
    const path = newFile()
    await (await open({ path })).close()
    raw(path).prepare(`DELETE FROM zaris_file_meta WHERE name = 'schema'`).run()
    expect((await (await open({ path })).commit([], [set('k')])).ok).toBe(true)
  })
})

describe('what a commit answers and writes', () => {
  test('a revision check compares the last write, a created check the life; a failed check answers exactly the current entries', async () => {
    const a = await open()
    const first = await a.commit([], [set('k', 1)])
    const second = await a.commit([], [set('k', 2)])
    if (!first.ok || !second.ok) throw new Error('commits failed')
    const refused = await a.commit([{ key: 'k', revision: first.revision }, { key: 'absent', revision: 3 }], [set('k', 3)])
    expect(refused).toStrictEqual({
      ok: false,
      failed: [
        { key: 'k', entry: { key: 'k', value: 2, revision: second.revision, created: first.revision } },
        { key: 'absent', entry: undefined },
      ],
    })
    expect((await a.commit([{ key: 'k', revision: second.revision }, { key: 'k2', created: null }], [set('k', 3)])).ok).toBe(true)
    expect((await a.commit([{ key: 'k', created: first.revision }], [set('k', 4)])).ok).toBe(true)
    expect((await a.commit([{ key: 'k', created: second.revision }], [set('k', 5)])).ok).toBe(false)
  })

  test('an entry without a TTL is read without one; with one, with the time left', async () => {
    const a = await open()
    const r = await a.commit([], [set('plain'), set('timed', 1, { ttl: 60_000, owner: 'o' })])
    expect(r).toStrictEqual({
      ok: true,
      revision: 1,
      entries: [
        { key: 'plain', value: 1, revision: 1, created: 1 },
        { key: 'timed', value: 1, revision: 1, created: 1, owner: 'o', ttl: 60_000 },
      ],
      deleted: [],
    })
    expect(await a.get('plain')).toStrictEqual({ key: 'plain', value: 1, revision: 1, created: 1 })
    expect((await a.list('')).entries[0]).toStrictEqual({ key: 'plain', value: 1, revision: 1, created: 1 })
    expect((await a.get('timed'))!.ttl).toBeGreaterThan(59_000)
    // A retried commit's answer, rebuilt from its events, is the same shape.
    const once = await a.commit([], [set('again'), set('and-again'), { type: 'delete', key: 'plain' }], { requestId: 'r' })
    expect(await a.commit([], [set('again'), set('and-again'), { type: 'delete', key: 'plain' }], { requestId: 'r' })).toStrictEqual(once)
  })

  test('a delete of nothing deletes nothing; a commit\'s events are its deletes then its puts, in op order, one revision', async () => {
    const path = newFile()
    const a = await open({ path })
    await a.commit([], [set('d1'), set('d2')])
    const w = collect()
    await a.watch('', w.sink)
    const r = await a.commit([], [set('p1'), { type: 'delete', key: 'd1' }, { type: 'delete', key: 'nothing' }, set('p2'), { type: 'delete', key: 'd2' }])
    expect(r).toMatchObject({ ok: true, deleted: ['d1', 'd2'] })
    expect(w.events.map((e) => `${e.type} ${e.key}`)).toEqual(['delete d1', 'delete d2', 'put p1', 'put p2'])
    expect(new Set(w.events.map((e) => e.revision)).size).toBe(1)
    // A commit that writes nothing takes a revision, with a `none` row that keeps it (watchers see none of it).
    const empty = await a.commit([], [])
    expect(empty).toMatchObject({ ok: true, revision: 3 })
    expect(raw(path).prepare('SELECT type FROM zaris_file_events WHERE revision = 3').all()).toEqual([{ type: 'none' }])
    expect((await a.commit([], [set('next')])).ok && 4).toBe(4)
    // Retried by its request id, an empty commit answers as it did: the `none` row is no delete.
    const first = await a.commit([], [], { requestId: 'empty' })
    expect(await a.commit([], [], { requestId: 'empty' })).toStrictEqual(first)
    expect(first).toStrictEqual({ ok: true, revision: 5, entries: [], deleted: [] })
  })

  test('bad input inside a commit is refused as it is (not as a failing file), and writes nothing', async () => {
    const a = await open()
    await a.commit([], [set('text', 'abc')])
    await expect(a.commit([], [{ type: 'add', key: 'text', delta: 1 }])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/holds/) })
    expect(await a.commit([], [{ type: 'add', key: 'n', delta: 2 }])).toMatchObject({ ok: true, revision: 2, entries: [{ key: 'n', value: 2 }] })
  })

  test('a file that is not a database fails at once, naming SQLite\'s code, not after the busy wait', async () => {
    const path = newFile()
    raw(path).close()
    const { writeFileSync } = await import('node:fs')
    writeFileSync(path, 'x'.repeat(4096))
    const started = performance.now()
    const err = await fileAdapter({ path, namespace: 'x' }).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/\(SQLITE_NOTADB\)/), cause: expect.anything() })
    expect(performance.now() - started).toBeLessThan(2_000)
  })

  test('a store at the last safe revision expires nothing (readers hide the entry) and refuses commits', async () => {
    const path = newFile()
    const { ManualClock } = await import('zaris/testing')
    const clock = new ManualClock(0)
    const a = await open({ path, clock })
    await a.commit([], [set('k', 1, { ttl: 10 })])
    raw(path).prepare('UPDATE zaris_file_spaces SET revision = ?, reserved = ?').run(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)
    await a.watch('', collect().sink)
    await clock.advance(20)
    expect(clock.pending).toBe(0) // no timer for an expiry that cannot be written
    expect(await a.get('k')).toBeUndefined()
    await expect(a.commit([], [set('x')])).rejects.toMatchObject({ code: 'REVISION_EXHAUSTED' })
    // A write that takes no revision still goes through, and expires nothing.
    await a.registerOwner!('someone')
    expect(raw(path).prepare(`SELECT count(*) AS n FROM zaris_file_entries`).get()).toEqual({ n: 1 })
    expect(raw(path).prepare(`SELECT revision FROM zaris_file_spaces`).get()).toEqual({ revision: Number.MAX_SAFE_INTEGER })
  })
})

describe('the log\'s bounds, to the revision', () => {
  test('history of size 3 is pruned once the revision is 1000 past it, to the last 3, and again 1000 later', async () => {
    const a = await open({ historySize: 3 })
    const from = async (after: number) => a.history!('', after, { maxEvents: 10, maxBytes: 1 << 20 }).then(() => 'kept', (e: { code: string }) => e.code)
    for (let i = 1; i <= 1_003; i++) await a.commit([], [set('k', i)])
    expect(await from(0)).toBe('kept')
    await a.commit([], [set('k', 1_004)])
    expect([await from(1_000), await from(1_001)]).toEqual(['COMPACTED', 'kept'])
    for (let i = 0; i < 5; i++) await a.commit([], [set('k', i)])
    expect(await from(1_001)).toBe('kept')
    const exact = collect()
    await a.watch('', exact.sink, 1_001)
    expect(exact.errors).toEqual([])
    expect(exact.events[0]!.revision).toBe(1_002)
    const gone = collect()
    await a.watch('', gone.sink, 1_000)
    await a.commit([], [set('later')])
    expect(gone.errors.map((e) => (e as { code?: string }).code)).toEqual(['COMPACTED'])
    expect(gone.events).toEqual([])
  })
})

describe('helpers', () => {
  test('keys as UTF-16BE bytes, and the bound past a prefix', () => {
    expect(keyOf(keyBytes('a\ud83d\ude00\uffff'))).toBe('a\ud83d\ude00\uffff')
    const b = (...bytes: number[]) => Buffer.from(bytes)
    expect(pastPrefix(b(0x00, 0x61))).toEqual(b(0x00, 0x62))
    expect(pastPrefix(b(0x00, 0xff))).toEqual(b(0x01))
    expect(pastPrefix(b(0x61, 0x00, 0xff, 0xff))).toEqual(b(0x61, 0x01))
    expect(pastPrefix(b(0xff, 0xff))).toBeNull()
    expect(pastPrefix(b())).toBeNull()
  })

  test('parseStat takes a line of exactly 20 fields after the name', () => {
    const twenty = Array.from({ length: 20 }, (_, i) => (i === 0 ? 'R' : String(i))).join(' ')
    expect(parseStat(`1 (x) ${twenty}`)).toEqual({ state: 'R', start: '19' })
  })

  test.runIf(process.platform === 'linux')('a zombie (exited, not yet collected by its parent) is dead', async () => {
    // sh starts a short sleep in the background, then becomes a long sleep that never collects it.
    const parent = spawn('sh', ['-c', 'sleep 0.05 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] })
    try {
      const pid = Number(await new Promise<string>((resolve) => parent.stdout!.once('data', (d) => resolve(String(d)))))
      const start = parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))!.start
      const it = { pid, start, host: thisProcess().host }
      await new Promise((r) => setTimeout(r, 200))
      expect(parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))!.state).toBe('Z')
      expect(processAlive(it)).toBe(false)
    } finally {
      parent.kill('SIGKILL')
    }
  })
})
