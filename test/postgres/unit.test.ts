/**
 * The Postgres adapter's pure parts, without a server: how keys, owners and
 * values are held and read back, URLs, and how driver failures become zaris
 * errors.
 */
import { describe, expect, test } from 'vitest'
import { isZarisError, UnavailableError, ZarisError } from 'zaris'
import { contend, CONTENDED } from '../../src/adapters/postgres/commit'
import { lockShape } from '../../src/adapters/postgres/lock-path'
import { hexBytes, keyBytes, keyOf, parseValue, prefixEnd, rowEntry, rowEvent, shownEntry, utf8 } from '../../src/adapters/postgres/codec'
import { isConnectionFailure, loadPg, pgError, sqlState } from '../../src/adapters/postgres/load'
import { channelOf, checkSchema, schemaSql, SCHEMA_VERSION } from '../../src/adapters/postgres/sql'
import { parsePostgresUrl, redactPostgresUrl } from '../../src/adapters/postgres/url'

describe('keys', () => {
  test('held as UTF-16 big-endian bytes: any well-formed key comes back, and byte order is UTF-16 code unit order', () => {
    const keys = ['a', '\u0000', 'ü', '\ud83d\ude00', '\ue000', 'k'.repeat(1024), '']
    for (const k of keys) expect(keyOf(keyBytes(k))).toBe(k)
    expect(keyBytes('ab').toString('hex')).toBe('00610062')
    const sorted = ['\ue000', '\ud83d\ude00', 'z', 'a', '\u0000'].sort()
    const byBytes = [...sorted].map(keyBytes).sort(Buffer.compare).map(keyOf)
    expect(byBytes).toEqual(sorted)
  })

  test('a prefix range ends just past every key that starts with it', () => {
    expect(prefixEnd(Buffer.from([0x00, 0x61]))).toEqual(Buffer.from([0x00, 0x62]))
    expect(prefixEnd(Buffer.from([0x00, 0xff]))).toEqual(Buffer.from([0x01]))
    expect(prefixEnd(Buffer.from([0xff, 0xff]))).toBeNull()
    expect(prefixEnd(Buffer.alloc(0))).toBeNull()
    const p = Buffer.from([0x12, 0xff])
    const end = prefixEnd(p)!
    expect(end).toEqual(Buffer.from([0x13]))
    // The prefix itself is not changed.
    expect(p).toEqual(Buffer.from([0x12, 0xff]))
    for (const k of ['pg/', 'pg/\uffff\uffff', 'pg/\ud83d\ude00']) {
      const b = keyBytes(k)
      expect(Buffer.compare(b, keyBytes('pg/')) >= 0 && Buffer.compare(b, prefixEnd(keyBytes('pg/'))!) < 0).toBe(true)
    }
    expect(Buffer.compare(keyBytes('ph'), prefixEnd(keyBytes('pg/'))!)).toBeGreaterThanOrEqual(0)
  })
})

describe('rows and answers', () => {
  test('an entry row: value, revision and created as numbers, owner decoded, ttl the time left (never below 0)', () => {
    const row = { k: keyBytes('lock'), value: '{"a":[1,null]}', revision: '12', created: '10', owner: utf8('me\u0000'), left: 2500.5 }
    expect(rowEntry(row)).toEqual({ key: 'lock', value: { a: [1, null] }, revision: 12, created: 10, owner: 'me\u0000', ttl: 2500.5 })
    expect(rowEntry({ ...row, owner: null, left: null })).toEqual({ key: 'lock', value: { a: [1, null] }, revision: 12, created: 10 })
    expect(rowEntry({ ...row, left: -3 }).ttl).toBe(0)
  })

  test('an event row: put (with created, owner, ttl), delete and expire', () => {
    const base = { revision: '7', seq: 0, k: keyBytes('k'), value: null, created: null, owner: null, ttl: null }
    expect(rowEvent({ ...base, type: 'd' })).toEqual({ type: 'delete', key: 'k', revision: 7 })
    expect(rowEvent({ ...base, type: 'e' })).toEqual({ type: 'expire', key: 'k', revision: 7 })
    expect(rowEvent({ ...base, type: 'p', value: '"v"', created: '5', owner: utf8('o'), ttl: 30 })).toEqual({ type: 'put', key: 'k', revision: 7, value: 'v', created: 5, owner: 'o', ttl: 30 })
    expect(rowEvent({ ...base, type: 'p', value: '1', created: '7' })).toEqual({ type: 'put', key: 'k', revision: 7, value: 1, created: 7 })
  })

  test("a failed check's entry: its ttl counted from the answer's time", () => {
    const owner = `\\x${Buffer.from('me').toString('hex')}`
    expect(shownEntry('k', ['null', 3, 2, owner, 11_000], 10_000)).toEqual({ key: 'k', value: null, revision: 3, created: 2, owner: 'me', ttl: 1_000 })
    expect(shownEntry('k', ['1', 3, 2, null, null], 10_000)).toEqual({ key: 'k', value: 1, revision: 3, created: 2 })
    expect(shownEntry('k', ['1', 3, 2, null, 9_000], 10_000).ttl).toBe(0)
    expect(hexBytes('\\x6869').toString()).toBe('hi')
  })

  test('a value that is not JSON says the tables were written by something else', () => {
    expect(() => parseValue('k', '{oops')).toThrow(/"k" is not JSON/)
    expect(parseValue('k', '"x"')).toBe('x')
  })
})

describe('urls and schemas', () => {
  test('zaris parameters come off the URL node-postgres gets; passwords never show', () => {
    expect(parsePostgresUrl('postgres://u:secret@db:5432/app?ns=jobs&schema=locks&sslmode=require')).toEqual({
      connectionString: 'postgres://u:secret@db:5432/app?sslmode=require',
      namespace: 'jobs',
      schema: 'locks',
    })
    expect(parsePostgresUrl('postgresql://db/app')).toEqual({ connectionString: 'postgresql://db/app', namespace: undefined, schema: undefined })
    expect(parsePostgresUrl('postgres:///app?host=/run/postgresql').namespace).toBeUndefined()
    expect(() => parsePostgresUrl('postgres:///app')).toThrow(/name the server/)
    expect(() => parsePostgresUrl('mysql://u:secret@db/app')).toThrow(/starts with postgres:\/\//)
    expect(() => parsePostgresUrl('not a url secret')).toThrow(/not a valid Postgres URL/)
    expect(redactPostgresUrl('postgres://u:secret@db/app')).toBe('postgres://u:***@db/app')
    expect(redactPostgresUrl('postgres://u@db/app')).toBe('postgres://u@db/app')
    expect(redactPostgresUrl('::')).toBe('(an invalid URL)')
  })

  test('schema names are plain identifiers; the script names the schema everywhere and records its version', () => {
    for (const ok of ['zaris', '_x', 'a1_b', 'a'.repeat(40)]) expect(checkSchema(ok)).toBe(ok)
    for (const bad of ['Zaris', '1a', 'a-b', 'a'.repeat(41), '', 7, 'a"b', ['zaris'], { toString: () => 'zaris' }]) expect(() => checkSchema(bad)).toThrow(/schema must be/)
    const sql = schemaSql('locks')
    expect(sql).not.toContain('@S')
    expect(sql).toContain('CREATE TABLE IF NOT EXISTS locks.entries')
    expect(sql).toContain(`INSERT INTO locks.meta (version) VALUES (${SCHEMA_VERSION})`)
    expect(sql).toContain("pg_notify('zaris:locks'")
    expect(schemaSql()).toContain('zaris.commit1(')
    expect(channelOf('locks')).toBe('zaris:locks')
  })
})

describe('errors', () => {
  const pgErr = (code: string | undefined, message = 'boom') => Object.assign(new Error(message), code === undefined ? {} : { code })

  test('a broken connection or a server going away: UNAVAILABLE, outcome unknown', () => {
    for (const e of [pgErr(undefined, 'Connection terminated unexpectedly'), pgErr('ECONNREFUSED'), pgErr('08006'), pgErr('57P01'), pgErr('57P03'), pgErr('53300'), pgErr('40001'), pgErr('40P01'), pgErr('57014')]) {
      const z = pgError(e, 'commit')
      expect(z.code, String((e as { code?: string }).code)).toBe('UNAVAILABLE')
      expect(z.message).toContain('may or may not have been applied')
      // A read changes nothing: its message says only that it failed.
      expect(pgError(e, 'get').message).toMatch(/^Postgres get failed: /)
    }
    expect(isConnectionFailure(pgErr('08001'))).toBe(true)
    expect(isConnectionFailure(pgErr('57P04'))).toBe(false)
    expect(isConnectionFailure(pgErr('42P01'))).toBe(false)
    expect(isConnectionFailure(pgError(pgErr(undefined), 'x'))).toBe(true)
    // A zaris error says itself whether the outcome is unknown, whatever its cause.
    expect(isConnectionFailure(new ZarisError('INTERNAL', 'no cause'))).toBe(false)
    expect(isConnectionFailure(new UnavailableError('no cause'))).toBe(true)
    // The driver's error stays the cause.
    const cut = pgErr('08006')
    expect(pgError(cut, 'commit').cause).toBe(cut)
  })

  test("a socket's own error that looks like a SQLSTATE (EPIPE) is a broken connection, not a refusal", () => {
    const pipe = Object.assign(pgErr('EPIPE', 'write EPIPE'), { errno: -32, syscall: 'write' })
    expect(sqlState(pipe)).toBeUndefined()
    expect(isConnectionFailure(pipe)).toBe(true)
    expect(pgError(pipe, 'commit').code).toBe('UNAVAILABLE')
    expect(sqlState(Object.assign(pgErr('EPIPE'), { code: 12345 }))).toBeUndefined()
  })

  test('refused credentials or rights: UNAUTHORIZED; revisions run out: REVISION_EXHAUSTED; the rest: INTERNAL, with the SQLSTATE', () => {
    for (const code of ['28P01', '28000', '42501']) expect(pgError(pgErr(code), 'open').code).toBe('UNAUTHORIZED')
    expect(pgError(pgErr('2200H'), 'commit').code).toBe('REVISION_EXHAUSTED')
    const internal = pgError(pgErr('42P01', 'relation x does not exist'), 'get')
    expect(internal.code).toBe('INTERNAL')
    expect(internal.message).toBe('Postgres refused get: relation x does not exist (SQLSTATE 42P01)')
    // The driver's error stays the cause, so the SQLSTATE can be read back through the zaris error.
    expect(sqlState(pgError(pgErr('28P01'), 'open'))).toBe('28P01')
    expect(sqlState(pgErr('ZR001'))).toBe('ZR001')
    expect(sqlState(pgErr('ECONNRESET'))).toBeUndefined()
    expect(sqlState(null)).toBeUndefined()
    const z = pgError(pgErr('42P01'), 'x')
    expect(pgError(z, 'y')).toBe(z)
    expect(isZarisError(pgError('a string', 'x'), 'UNAVAILABLE')).toBe(true)
  })

  test('node-postgres missing, or a module that is not it: UNSUPPORTED saying how to install it', async () => {
    await expect(loadPg('zaris-no-such-pg')).rejects.toMatchObject({ code: 'UNSUPPORTED', message: expect.stringContaining('npm install pg') })
    await expect(loadPg('zaris-no-such-pg')).rejects.toMatchObject({ message: expect.stringMatching(/^the Postgres adapter needs the pg package/) })
    await expect(loadPg('node:path')).rejects.toMatchObject({ code: 'UNSUPPORTED', message: expect.stringContaining("Pool and Client") })
    await expect(loadPg(new URL('./fixtures/not-pg.mjs', import.meta.url).href)).rejects.toMatchObject({ code: 'UNSUPPORTED', message: expect.stringContaining('Pool and Client') })
    // A Pool alone is not enough: the LISTEN connection is a Client.
    await expect(loadPg(new URL('./fixtures/pool-only.mjs', import.meta.url).href)).rejects.toMatchObject({ code: 'UNSUPPORTED', message: expect.stringContaining('Pool and Client') })
    expect(typeof (await loadPg()).Pool).toBe('function')
  })

  test('the contended keys an adapter remembers are bounded: the oldest go first; a check that holds forgets its key', () => {
    const keys = new Set<string>()
    for (let i = 0; i < CONTENDED + 76; i++) contend(keys, `k${i}`, true)
    expect(keys.size).toBe(CONTENDED)
    expect(keys.has('k75')).toBe(false)
    expect(keys.has('k76') && keys.has(`k${CONTENDED + 75}`)).toBe(true)
    // Failing again makes a key the newest: it outlives older ones.
    contend(keys, 'k76', true)
    contend(keys, 'new', true)
    expect(keys.has('k76') && !keys.has('k77')).toBe(true)
    contend(keys, 'k76', false)
    expect(keys.has('k76')).toBe(false)
    expect(keys.size).toBe(CONTENDED - 1)
  })

  test('only a take (no entry, then a set of that key) and a release (created, then a delete of that key) run as one statement', () => {
    const set = (key: string) => ({ type: 'set' as const, key, value: 1 })
    const del = (key: string) => ({ type: 'delete' as const, key })
    expect(lockShape([{ key: 'k', revision: null }], [set('k')])).toBe('take')
    expect(lockShape([{ key: 'k', created: 7 }], [del('k')])).toBe('release')
    // Anything else keeps every check and op: the full commit runs it.
    expect(lockShape([{ key: 'k', revision: null }], [set('k'), set('k2')])).toBeUndefined()
    expect(lockShape([{ key: 'k', revision: null }, { key: 'j', revision: null }], [set('k')])).toBeUndefined()
    expect(lockShape([], [set('k')])).toBeUndefined()
    expect(lockShape([{ key: 'a', revision: null }], [set('b')])).toBeUndefined()
    expect(lockShape([{ key: 'k', created: 7 }], [del('j')])).toBeUndefined()
    expect(lockShape([{ key: 'k', revision: 5 }], [set('k')])).toBeUndefined()
    expect(lockShape([{ key: 'k', revision: null }], [del('k')])).toBeUndefined()
    expect(lockShape([{ key: 'k', created: 7 }], [set('k')])).toBeUndefined()
    expect(lockShape([{ key: 'k', revision: 3 }], [del('k')])).toBeUndefined()
    expect(lockShape([{ key: 'k', revision: null }], [{ type: 'add', key: 'k', delta: 1 }])).toBeUndefined()
  })
})
