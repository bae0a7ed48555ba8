/**
 * The Postgres adapter's own behaviour, beyond the conformance suite: its
 * options and URLs, its tables (made on first use, or ahead of time by a
 * role that may, for one that may not), a commit whose answer is lost, the
 * log's bounds, and LISTEN/NOTIFY against polling. On a real Postgres.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { connect, parseUrl, type WatchEvent } from 'zaris'
import { postgresAdapter, schemaSql, SCHEMA_VERSION } from 'zaris/postgres'
import { FaultProxy } from '../faults/proxy'
import { until } from '../conformance/util'
import { startPostgres, type PostgresServer } from './server'

let server: PostgresServer
let admin: pg.Client
let n = 0
const ns = () => `adapter-${++n}`

beforeAll(async () => {
  server = await startPostgres()
  admin = new pg.Client({ connectionString: server.url() })
  await admin.connect()
})
afterAll(async () => {
  await admin?.end()
  await server?.dispose()
})

describe('urls and options', () => {
  test('postgres:// and postgresql:// with ?ns= (and &schema=) connect; bad ones are refused with a message that names the problem', async () => {
    expect(parseUrl('postgres://app:secret@db:5432/app?ns=jobs')).toMatchObject({ kind: 'postgres', namespace: 'jobs' })
    expect(parseUrl('postgresql://db/app?ns=jobs&schema=locks')).toMatchObject({ kind: 'postgres', namespace: 'jobs' })
    expect(() => parseUrl('postgres://app:secret@db:5432/app')).toThrow(/add \?ns=/)
    expect(() => parseUrl('postgres://app:secret@db:5432/app')).not.toThrow(/secret/)
    expect(() => parseUrl('postgres://db/app?ns=bad/ns')).toThrow(/namespace/)
    const client = await connect(`${server.url('via-connect')}&schema=viaurl`)
    try {
      await client.put('k', 'v')
      expect((await admin.query('SELECT count(*)::int AS n FROM viaurl.entries')).rows[0].n).toBe(1)
    } finally {
      await client.close()
    }
  })

  test('bad options throw INVALID_ARGUMENT naming the option', async () => {
    const url = server.url('options')
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /exactly one of url or pool/],
      [{ url, pool: {} }, /exactly one of url or pool/],
      [{ url: 42 }, /url must be a string/],
      [{ url, namespace: 'a b' }, /namespace/],
      [{ url, schema: 'Zaris' }, /schema/],
      [{ pool: { query() {} } }, /pool must be a pg Pool/],
      [{ url, pg: 'max=1' }, /pg must be an object/],
      [{ url, listen: 1 }, /listen/],
      [{ url, createSchema: 'yes' }, /createSchema/],
      [{ url, historySize: 0 }, /historySize/],
      [{ url, pollInterval: 1.5 }, /pollInterval/],
      [{ url, timeout: -1 }, /timeout/],
    ]
    for (const [options, message] of bad) await expect(postgresAdapter(options), JSON.stringify(options)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(message) })
    await expect(postgresAdapter({ url: 'mysql://db/app' })).rejects.toMatchObject({ code: 'INVALID_URL' })
    await expect(postgresAdapter({ url: 'postgres://' })).rejects.toMatchObject({ code: 'INVALID_URL' })
  })

  test("the caller's own pool: used, and left open", async () => {
    const pool = new pg.Pool({ connectionString: server.url(), max: 2 })
    const a = await postgresAdapter({ pool, namespace: ns() })
    const r = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    expect(r.ok).toBe(true)
    await a.close()
    expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1)
    await pool.end()
  })

  test('an unreachable server fails with UNAVAILABLE, a role that may not make the tables with UNAUTHORIZED', async () => {
    await expect(postgresAdapter({ url: `postgres://zaris@127.0.0.1:1/postgres?ns=x`, pg: { connectionTimeoutMillis: 500 } })).rejects.toMatchObject({ code: 'UNAVAILABLE' })
    await admin.query("DO $$ BEGIN CREATE ROLE locked LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    await expect(postgresAdapter({ url: `postgres://locked@127.0.0.1:${server.port}/${server.database}?ns=x&schema=nope` })).rejects.toMatchObject({ code: 'UNAUTHORIZED' })
  })
})

describe('tables', () => {
  test('made on first use by one of many adapters opening at once; a newer version is refused', async () => {
    const opened = await Promise.all(Array.from({ length: 5 }, () => postgresAdapter({ url: server.url(ns()), schema: 'racing' })))
    await Promise.all(opened.map((a) => a.close()))
    expect((await admin.query('SELECT version FROM racing.meta')).rows).toEqual([{ version: SCHEMA_VERSION }])
    await admin.query('UPDATE racing.meta SET version = version + 1')
    await expect(postgresAdapter({ url: server.url(ns()), schema: 'racing' })).rejects.toMatchObject({ code: 'UNSUPPORTED', message: expect.stringContaining('newer zaris') })
  })

  test('an application role that may not run DDL: refused with the way out, then served once the owner ran schemaSql()', async () => {
    await admin.query("DO $$ BEGIN CREATE ROLE app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$; CREATE SCHEMA IF NOT EXISTS owned")
    const url = `postgres://app@127.0.0.1:${server.port}/${server.database}?ns=${ns()}&schema=owned`
    // No right to the schema at all, then the schema without the tables: each says what to run.
    await expect(postgresAdapter({ url })).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('schemaSql("owned")') })
    await admin.query('GRANT USAGE ON SCHEMA owned TO app')
    await expect(postgresAdapter({ url, createSchema: false })).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('schemaSql("owned")') })
    await expect(postgresAdapter({ url })).rejects.toMatchObject({ code: 'UNAUTHORIZED' })
    await admin.query(schemaSql('owned'))
    await admin.query(`GRANT USAGE ON SCHEMA owned TO app; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA owned TO app;
      GRANT USAGE ON ALL SEQUENCES IN SCHEMA owned TO app; GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA owned TO app`)
    const client = await connect(url, { id: 'app', postgres: { createSchema: false } })
    try {
      const lock = (await client.locks.acquire('lock:x'))!
      expect(await client.counters.increment('n', 2)).toBe(2)
      expect(await lock.release()).toBe(true)
    } finally {
      await client.close()
    }
    expect(() => schemaSql('Bad')).toThrow(/schema/)
    expect(schemaSql()).toContain('CREATE TABLE IF NOT EXISTS zaris.entries')
  })
})

describe('commits', () => {
  test('a commit whose answer is lost is sent again and answered, not applied twice', async () => {
    const proxy = await new FaultProxy(server.port).start()
    const a = await postgresAdapter({ url: server.url(ns(), proxy.port), listen: false })
    try {
      await a.commit([], [{ type: 'add', key: 'n', delta: 1 }, { type: 'set', key: 'd1', value: 1 }])
      proxy.holdReplies('commit')
      const adding = a.commit([{ key: 'n', revision: null }, { key: 'other', revision: null }], [{ type: 'add', key: 'n', delta: 10 }, { type: 'set', key: 'x', value: 'y' }])
      const plain = a.commit([], [{ type: 'add', key: 'm', delta: 5 }])
      // A retry rebuilds its answer from the log: a delete that found its key says so, one that did not, not.
      const deleting = a.commit([], [{ type: 'delete', key: 'd1' }, { type: 'delete', key: 'absent' }, { type: 'set', key: 'x2', value: 'z' }])
      await new Promise((r) => setTimeout(r, 300))
      expect(proxy.dropped).toBeGreaterThan(0)
      proxy.heal()
      // The first checked key is live: the commit failed the first time, and the retry answers that.
      expect(await adding).toMatchObject({ ok: false, failed: [{ key: 'n', entry: { value: 1 } }] })
      expect(await plain).toMatchObject({ ok: true, entries: [{ key: 'm', value: 5 }] })
      expect((await a.get('m'))?.value).toBe(5)
      expect(await deleting).toMatchObject({ ok: true, deleted: ['d1'], entries: [{ key: 'x2', value: 'z' }] })
      expect(await a.get('d1')).toBeUndefined()
    } finally {
      await a.close()
      await proxy.stop()
    }
  })

  test('fresh starts a new life in a commit of several ops too (the general function, not the one-op one)', async () => {
    const a = await postgresAdapter({ url: server.url(ns()) })
    try {
      const first = await a.commit([], [{ type: 'set', key: 'k', value: 1, owner: 'o' }])
      const again = await a.commit([], [{ type: 'set', key: 'k', value: 2, owner: 'o', fresh: true }, { type: 'set', key: 'k2', value: 0, owner: 'o' }])
      expect(first.ok && again.ok).toBe(true)
      if (again.ok) expect(again.entries.map((e) => [e.key, e.created])).toEqual([['k', again.revision], ['k2', again.revision]])
      const kept = await a.commit([], [{ type: 'set', key: 'k', value: 3, owner: 'o' }, { type: 'set', key: 'k2', value: 1, owner: 'o' }])
      if (kept.ok && again.ok) expect(kept.entries.map((e) => e.created)).toEqual([again.revision, again.revision])
    } finally {
      await a.close()
    }
  })

  test('a counter past the safe integers, or over a non-number, is refused naming the key; nothing is written', async () => {
    const a = await postgresAdapter({ url: server.url(ns()) })
    try {
      await a.commit([], [{ type: 'set', key: 'big', value: Number.MAX_SAFE_INTEGER - 1 }, { type: 'set', key: 'text', value: 'x' }])
      await expect(a.commit([], [{ type: 'add', key: 'big', delta: 2 }])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('"big"') })
      await expect(a.commit([], [{ type: 'set', key: 'c', value: 1 }, { type: 'add', key: 'text', delta: 1 }])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('"text"') })
      expect(await a.get('c')).toBeUndefined()
      expect(await a.commit([], [{ type: 'add', key: 'big', delta: 1 }])).toMatchObject({ ok: true, entries: [{ value: Number.MAX_SAFE_INTEGER }] })
    } finally {
      await a.close()
    }
  })
})

describe('watch', () => {
  test('the log keeps historySize events: a watch from before them ends with COMPACTED', async () => {
    const a = await postgresAdapter({ url: server.url(ns()), historySize: 100 })
    try {
      const first = await a.commit([], [{ type: 'set', key: 'k', value: 0 }])
      for (let i = 1; i <= 250; i++) await a.commit([], [{ type: 'set', key: 'k', value: i }])
      const errors: string[] = []
      await a.watch('', { event() {}, error: (e) => errors.push((e as unknown as { code: string }).code) }, first.ok ? first.revision : 0)
      await until(() => errors.length > 0)
      expect(errors).toEqual(['COMPACTED'])
      await expect(a.history('', first.ok ? first.revision : 0, { maxEvents: 10, maxBytes: 1 << 20 })).rejects.toMatchObject({ code: 'COMPACTED' })
      const { revision } = await a.position()
      const recent = await a.history('', revision - 20, { maxEvents: 1_000, maxBytes: 1 << 20 })
      expect(recent.events.length).toBeGreaterThan(0)
      expect(recent.through).toBe(revision)
    } finally {
      await a.close()
    }
  })

  for (const listen of [true, false]) {
    test(`watches are woken ${listen ? 'by NOTIFY' : 'by polling (listen: false)'} and miss nothing`, async () => {
      const url = server.url(ns())
      const watcher = await postgresAdapter({ url, listen, pollInterval: 50 })
      const writer = await postgresAdapter({ url, pg: { max: 1 } })
      try {
        const seen: WatchEvent[] = []
        const unwatch = await watcher.watch('w/', { event: (e) => seen.push(e), error() {} })
        const revisions: number[] = []
        for (let i = 0; i < 20; i++) {
          const r = await writer.commit([], [{ type: 'set', key: `w/${i % 3}`, value: i }])
          if (r.ok) revisions.push(r.revision)
        }
        await until(() => seen.length === 20)
        expect(seen.map((e) => e.revision)).toEqual(revisions)
        unwatch()
      } finally {
        await watcher.close()
        await writer.close()
      }
    })
  }
})
