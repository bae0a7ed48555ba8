/**
 * The Postgres adapter's own behaviour, beyond the conformance suite: its
 * options and URLs, its tables (made on first use, or ahead of time by a
 * role that may, for one that may not), a commit whose answer is lost, the
 * log's bounds, and LISTEN/NOTIFY against polling. On a real Postgres.
 */
import pg from 'pg'
import { describe, expect, test } from 'vitest'
import { connect, parseUrl, type WatchEvent } from 'zaris'
import { fromUrl, postgresAdapter, schemaSql, SCHEMA_VERSION } from 'zaris/postgres'
import { lockSql } from '../../src/adapters/postgres/lock-path'
import { FaultProxy } from '../faults/proxy'
import { sleep, until } from '../conformance/util'
import { countedPool, usePostgres } from './use-postgres'

const db = usePostgres('adapter')
const ns = db.ns

describe('urls and options', () => {
  test('postgres:// and postgresql:// with ?ns= (and &schema=) connect; bad ones are refused with a message that names the problem', async () => {
    expect(parseUrl('postgres://app:secret@db:5432/app?ns=jobs')).toMatchObject({ kind: 'postgres', namespace: 'jobs' })
    expect(parseUrl('postgresql://db/app?ns=jobs&schema=locks')).toMatchObject({ kind: 'postgres', namespace: 'jobs' })
    expect(() => parseUrl('postgres://app:secret@db:5432/app')).toThrow(/add \?ns=/)
    expect(() => parseUrl('postgres://app:secret@db:5432/app')).not.toThrow(/secret/)
    expect(() => parseUrl('postgres://db/app?ns=bad/ns')).toThrow(/namespace/)
    const client = await connect(`${db.server.url('via-connect')}&schema=viaurl`)
    try {
      await client.put('k', 'v')
      expect((await db.admin.query('SELECT count(*)::int AS n FROM viaurl.entries')).rows[0].n).toBe(1)
    } finally {
      await client.close()
    }
  })

  test('bad options throw INVALID_ARGUMENT naming the option', async () => {
    const url = db.server.url('options')
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /exactly one of url or pool/],
      [{ url, pool: {} }, /exactly one of url or pool/],
      [{ url: 42 }, /url must be a string/],
      [{ url, namespace: 'a b' }, /namespace/],
      [{ url, schema: 'Zaris' }, /schema/],
      [{ pool: { query() {} } }, /pool must be a pg Pool/],
      [{ pool: { connect() {} } }, /pool must be a pg Pool/],
      [{ pool: null }, /pool must be a pg Pool/],
      [{ pool: 'postgres://db/app' }, /pool must be a pg Pool/],
      [{ url, namespace: 42 }, /namespace must be .*got number 42/],
      [{ url, pg: null }, /pg must be an object/],
      [{ url, listen: null }, /listen/],
      [{ url, requestRetention: 0 }, /requestRetention/],
      [{ url, callTimeout: 0 }, /callTimeout/],
      [{ url, pg: 'max=1' }, /pg must be an object/],
      [{ url, listen: 1 }, /listen/],
      [{ url, createSchema: 'yes' }, /createSchema/],
      [{ url, historySize: 0 }, /historySize/],
      [{ url, pollInterval: 1.5 }, /pollInterval/],
      [{ url, timeout: -1 }, /timeout/],
    ]
    // The least of each count is 1.
    await (await postgresAdapter({ url, historySize: 1, pollInterval: 1, requestRetention: 1, callTimeout: 1_000, timeout: 1 })).close()
    for (const [options, message] of bad) await expect(postgresAdapter(options), JSON.stringify(options)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(message) })
    await expect(postgresAdapter({ url: 'mysql://db/app' })).rejects.toMatchObject({ code: 'INVALID_URL' })
    for (const postgres of ['max=1', null]) {
      await expect(Promise.resolve().then(() => fromUrl(url, { postgres }))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/options.postgres must be an object/) })
    }
    await expect(postgresAdapter({ url: 'postgres://' })).rejects.toMatchObject({ code: 'INVALID_URL' })
  })

  test("the caller's own pool: used, and left open", async () => {
    const pool = new pg.Pool({ connectionString: db.server.url(), max: 2 })
    const a = await postgresAdapter({ pool, namespace: ns() })
    expect(a.name).toBe('postgres')
    const r = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    expect(r.ok).toBe(true)
    await a.close()
    await expect(a.get('k')).rejects.toMatchObject({ code: 'CLOSED', message: 'the postgres adapter is closed' })
    expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1)
    await pool.end()
  })

  test('an unreachable server fails with UNAVAILABLE, a role that may not make the tables with UNAUTHORIZED', async () => {
    await expect(postgresAdapter({ url: `postgres://zaris@127.0.0.1:1/postgres?ns=x`, pg: { connectionTimeoutMillis: 500 } })).rejects.toMatchObject({ code: 'UNAVAILABLE' })
    await db.admin.query("DO $$ BEGIN CREATE ROLE locked LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    await expect(postgresAdapter({ url: `postgres://locked@127.0.0.1:${db.server.port}/${db.server.database}?ns=x&schema=nope` })).rejects.toMatchObject({ code: 'UNAUTHORIZED' })
  })
})

describe('tables', () => {
  test('made on first use by one of many adapters opening at once; a newer version is refused', async () => {
    const opened = await Promise.all(Array.from({ length: 5 }, () => postgresAdapter({ url: db.server.url(ns()), schema: 'racing' })))
    await Promise.all(opened.map((a) => a.close()))
    expect((await db.admin.query('SELECT version FROM racing.meta')).rows).toEqual([{ version: SCHEMA_VERSION }])
    await db.admin.query('UPDATE racing.meta SET version = version + 1')
    await expect(postgresAdapter({ url: db.server.url(ns()), schema: 'racing' })).rejects.toMatchObject({ code: 'UNSUPPORTED', message: expect.stringContaining('newer zaris') })
  })

  test('tables of an older version are brought up to date on open, or, with createSchema: false, refused saying so', async () => {
    await (await postgresAdapter({ url: db.server.url(ns()), schema: 'aging' })).close()
    await db.admin.query('UPDATE aging.meta SET version = version - 1')
    await expect(postgresAdapter({ url: db.server.url(ns()), schema: 'aging', createSchema: false })).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: expect.stringContaining(`at version ${SCHEMA_VERSION - 1}, older than ${SCHEMA_VERSION}`),
    })
    await (await postgresAdapter({ url: db.server.url(ns()), schema: 'aging' })).close()
    expect((await db.admin.query('SELECT version FROM aging.meta')).rows).toEqual([{ version: SCHEMA_VERSION }])
  })

  test('tables that cannot be made for another reason than rights: INTERNAL, with what Postgres said', async () => {
    // A table of that name and another shape: the indexes on its columns cannot be made.
    await db.admin.query('CREATE SCHEMA IF NOT EXISTS clash; CREATE TABLE IF NOT EXISTS clash.entries (x int)')
    await expect(postgresAdapter({ url: db.server.url(ns()), schema: 'clash' })).rejects.toMatchObject({ code: 'INTERNAL', message: expect.stringMatching(/^Postgres refused the setup of the zaris tables in schema clash: .*does not exist/) })
  })

  test('an application role that may not run DDL: refused with the way out, then served once the owner ran schemaSql()', async () => {
    await db.admin.query("DO $$ BEGIN CREATE ROLE app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$; CREATE SCHEMA IF NOT EXISTS owned")
    const url = `postgres://app@127.0.0.1:${db.server.port}/${db.server.database}?ns=${ns()}&schema=owned`
    // No right to the schema at all, then the schema without the tables: each says what to run.
    await expect(postgresAdapter({ url })).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringMatching(/let this role read the zaris tables in schema owned: .*schemaSql\("owned"\)/) })
    await db.admin.query('GRANT USAGE ON SCHEMA owned TO app')
    await expect(postgresAdapter({ url, createSchema: false })).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('schemaSql("owned")') })
    await expect(postgresAdapter({ url })).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('open the adapter with createSchema: false') })
    await db.admin.query(schemaSql('owned'))
    await db.admin.query(`GRANT USAGE ON SCHEMA owned TO app; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA owned TO app;
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

describe('tables', () => {
  test('entries and stores keep 16 pages through churn and vacuum, so the lock path plans index scans, never a scan of every dead row', async () => {
    const name = ns()
    const a = await postgresAdapter({ url: db.server.url(name), schema: 'sized' })
    const pages = async () => (await db.admin.query("SELECT (pg_relation_size('sized.entries') / 8192)::int AS e, (pg_relation_size('sized.stores') / 8192)::int AS s")).rows[0]
    try {
      // Made at that size, with no row left behind (nor one per filler namespace).
      expect(await pages()).toMatchObject({ e: expect.toSatisfy((n: number) => n >= 16), s: expect.toSatisfy((n: number) => n >= 16) })
      expect((await db.admin.query('SELECT (SELECT count(*) FROM sized.entries)::int AS e, (SELECT count(*) FROM sized.stores)::int AS s')).rows[0]).toEqual({ e: 0, s: 0 })
      for (let i = 0; i < 50; i++) {
        const r = await a.commit([{ key: 'lock:p', revision: null }], [{ type: 'set', key: 'lock:p', value: null, ttl: 30_000 }])
        expect(r.ok && (await a.commit([{ key: 'lock:p', created: r.revision }], [{ type: 'delete', key: 'lock:p' }])).ok).toBe(true)
      }
      await db.admin.query('VACUUM sized.entries, sized.stores')
      expect(await pages()).toMatchObject({ e: expect.toSatisfy((n: number) => n >= 16), s: expect.toSatisfy((n: number) => n >= 16) })
      // The plan a prepared statement keeps (generic), as the planner makes it after that vacuum.
      const key = `'\\x${Buffer.from('lock:q', 'utf16le').swap16().toString('hex')}'`
      const plan = async (shape: 'take' | 'release', args: string) => {
        await db.admin.query(`PREPARE sized_${shape} AS ${lockSql(shape, 'sized')}`)
        try {
          return (await db.admin.query(`EXPLAIN (COSTS false) EXECUTE sized_${shape}('${name}', 1, ${key}, ${args})`)).rows.map((r) => r['QUERY PLAN'] as string).join('\n')
        } finally {
          await db.admin.query(`DEALLOCATE sized_${shape}`)
        }
      }
      await db.admin.query('SET plan_cache_mode = force_generic_plan')
      const take = await plan('take', "'null', 120000, 10000, 30000, NULL")
      const release = await plan('release', '5, 120000, 10000')
      await db.admin.query('RESET plan_cache_mode')
      expect(take).toMatch(/Index (Only )?Scan using entries_pkey on entries/)
      expect(`${take}\n${release}`).toMatch(/Index Scan using stores_pkey on stores/)
      expect(`${take}\n${release}`).not.toMatch(/Seq Scan/)
    } finally {
      await a.close()
    }
  })
})

/** A set of `key` whose request is lost on its way (blackholed, then the way healed): its retry must find it not applied, and apply it. */
async function lostOnItsWay(proxy: FaultProxy, a: Awaited<ReturnType<typeof postgresAdapter>>, key: string): Promise<void> {
  proxy.blackhole()
  const putting = a.commit([], [{ type: 'set', key, value: 1 }])
  await new Promise((r) => setTimeout(r, 300))
  proxy.heal()
  expect(await putting).toMatchObject({ ok: true, entries: [{ key, value: 1 }] })
}

describe('commits', () => {
  test('a commit whose answer is lost is sent again and answered, not applied twice', async () => {
    const proxy = await new FaultProxy(db.server.port).start()
    const a = await postgresAdapter({ url: db.server.url(ns(), proxy.port), listen: false })
    try {
      await a.commit([], [{ type: 'add', key: 'n', delta: 1 }, { type: 'set', key: 'd1', value: 1 }])
      await a.commit([], [{ type: 'set', key: 'owned', value: 5, owner: 'me', ttl: 60_000 }])
      proxy.holdReplies('commit')
      // An add keeps its entry's owner and deadline: the retry's answer shows them too.
      const ownedAdd = a.commit([], [{ type: 'add', key: 'owned', delta: 1 }])
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
      const owned = await ownedAdd
      expect(owned).toMatchObject({ ok: true, entries: [{ key: 'owned', value: 6, owner: 'me' }] })
      expect(owned.ok && owned.entries[0]!.ttl).toBeGreaterThan(50_000)
    } finally {
      await a.close()
      await proxy.stop()
    }
  })

  test('a retry on a contended key finds its first attempt applied (never answered from a snapshot); the revision it starts from is the newest the adapter saw', async () => {
    const proxy = await new FaultProxy(db.server.port).start()
    const name = ns()
    const a = await postgresAdapter({ url: db.server.url(name, proxy.port), listen: false, historySize: 50 })
    try {
      // Past the log's bound: a retry that started from revision 0 could no longer tell.
      for (let i = 0; i < 200; i++) await a.commit([], [{ type: 'set', key: `p${i % 5}`, value: i }])
      await until(async () => (await db.admin.query('SELECT compacted::int AS c FROM zaris.stores WHERE ns = $1', [name])).rows[0].c > 0)
      const first = await a.commit([{ key: 'c', revision: null }], [{ type: 'set', key: 'c', value: 1 }])
      // A failed check by revision: the adapter now answers checks on 'c' from a snapshot first.
      expect(await a.commit([{ key: 'c', revision: null }], [{ type: 'set', key: 'c', value: 2 }])).toMatchObject({ ok: false })
      if (!first.ok) throw new Error('not set')
      proxy.holdReplies('commit')
      const setting = a.commit([{ key: 'c', revision: first.revision }], [{ type: 'set', key: 'c', value: 3 }])
      await new Promise((r) => setTimeout(r, 300))
      expect(proxy.dropped).toBeGreaterThan(0)
      proxy.heal()
      // Applied the first time: its retry sees 'c' at a newer revision, and must answer ok, not "changed".
      expect(await setting).toMatchObject({ ok: true, entries: [{ key: 'c', value: 3 }] })
      // A request lost on its way: the retry looks for it from the newest revision this adapter
      // committed (the log still reaches there), not from the one it opened at (pruned).
      await lostOnItsWay(proxy, a, 'b')
      expect((await a.get('c'))?.value).toBe(3)
      // An adapter opened now starts from the namespace's revision at its open, not from 0 (long pruned).
      const b = await postgresAdapter({ url: db.server.url(name, proxy.port), listen: false, historySize: 50 })
      try {
        await lostOnItsWay(proxy, b, 'b2')
      } finally {
        await b.close()
      }
    } finally {
      await a.close()
      await proxy.stop()
    }
  })

  test('the revision a retry looks from is the newest the adapter saw in its reads too, never an older one it read after', async () => {
    const proxy = await new FaultProxy(db.server.port).start()
    const name = ns()
    const w = await postgresAdapter({ url: db.server.url(name), listen: false, historySize: 50 })
    await w.commit([], [{ type: 'set', key: 'old', value: 1 }])
    const a = await postgresAdapter({ url: db.server.url(name, proxy.port), listen: false, historySize: 50 })
    try {
      // The log moves past where a opened, by another adapter's writes.
      for (let i = 0; i < 200; i++) await w.commit([], [{ type: 'set', key: `p${i % 5}`, value: i }])
      await w.commit([], [{ type: 'set', key: 'fresh', value: 1 }])
      await until(async () => (await db.admin.query('SELECT compacted::int AS c FROM zaris.stores WHERE ns = $1', [name])).rows[0].c > 1)
      expect(await a.get('fresh')).toMatchObject({ value: 1 })
      expect(await a.get('old')).toMatchObject({ value: 1 })
      await lostOnItsWay(proxy, a, 'b')
    } finally {
      await a.close()
      await w.close()
      await proxy.stop()
    }
  })

  test("a lock's take and release run as one statement each, and hand every other case to the full commit with the same answers", async () => {
    const name = ns()
    const a = await postgresAdapter({ url: db.server.url(name) })
    const events = async (key: string) =>
      (await db.admin.query("SELECT type, revision::int AS r, req IS NOT NULL AS req FROM zaris.events WHERE ns = $1 AND k = $2 AND type <> 'n' ORDER BY revision", [name, Buffer.from(key, 'utf16le').swap16()])).rows
    const take = (key: string, ttl = 30_000) => a.commit([{ key, revision: null }], [{ type: 'set', key, value: { v: key }, ttl, owner: 'me' }])
    const release = (key: string, created: number) => a.commit([{ key, created }], [{ type: 'delete', key }])
    try {
      // A new namespace (no row to lock yet): the full commit makes it.
      const first = await take('k')
      expect(first).toMatchObject({ ok: true, entries: [{ key: 'k', value: { v: 'k' }, owner: 'me', ttl: 30_000 }] })
      if (!first.ok) return
      expect(first.entries[0]!.created).toBe(first.revision)
      // Held: refused, showing the holder.
      expect(await take('k')).toMatchObject({ ok: false, failed: [{ key: 'k', entry: { owner: 'me', created: first.revision } }] })
      expect(await release('k', first.revision + 1)).toMatchObject({ ok: false, failed: [{ key: 'k', entry: { created: first.revision } }] })
      const released = await release('k', first.revision)
      expect(released).toMatchObject({ ok: true, deleted: ['k'], entries: [] })
      expect(await release('k', first.revision)).toMatchObject({ ok: false, failed: [{ key: 'k' }] })
      const again = await take('k')
      expect(again.ok && released.ok && again.revision > released.revision).toBe(true)
      // Past its deadline: the take expires the old life first (its own revision), then takes.
      const short = await take('short', 1)
      await new Promise((r) => setTimeout(r, 20))
      const over = await take('short')
      expect(over.ok && short.ok).toBe(true)
      if (!over.ok || !short.ok || !again.ok) return
      expect(await events('short')).toEqual([{ type: 'p', r: short.revision, req: true }, { type: 'e', r: expect.any(Number), req: false }, { type: 'p', r: over.revision, req: true }])
      expect((await events('short'))[1].r).toBeGreaterThan(short.revision)
      // An expired hold's release is refused after its expiry.
      const gone = await take('gone', 1)
      await new Promise((r) => setTimeout(r, 20))
      expect(gone.ok && (await release('gone', gone.revision))).toMatchObject({ ok: false, failed: [{ key: 'gone' }] })
      expect((await events('gone')).map((e) => e.type)).toEqual(['p', 'e'])
      // Every write carries its request id, one log row each.
      expect(await events('k')).toEqual([{ type: 'p', r: first.revision, req: true }, { type: 'd', r: released.ok ? released.revision : 0, req: true }, { type: 'p', r: again.revision, req: true }])
    } finally {
      await a.close()
    }
  })

  test('a take and a release are sent as their named statements (seen on the one connection that ran them)', async () => {
    const pool = new pg.Pool({ connectionString: db.server.url(), max: 1 })
    const a = await postgresAdapter({ pool, namespace: ns() })
    expect(a.name).toBe('postgres')
    const names = async () => (await pool.query('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((r) => (r.name as string).replace(/_[0-9a-f]{8}$/, ''))
    try {
      await a.commit([], [{ type: 'set', key: 'x', value: 1 }])
      expect(await names()).toEqual([])
      const t = await a.commit([{ key: 'l', revision: null }], [{ type: 'set', key: 'l', value: null, ttl: 30_000 }])
      expect(await names()).toEqual(['zaris_take'])
      expect(t.ok && (await a.commit([{ key: 'l', created: t.revision }], [{ type: 'delete', key: 'l' }])).ok).toBe(true)
      expect(await names()).toEqual(['zaris_release', 'zaris_take'])
      // Each name carries a hash of its text (one name never stands for two texts behind a shared pooler).
      const raw = (await pool.query('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((r) => r.name as string)
      expect(raw).toEqual([expect.stringMatching(/^zaris_release_[0-9a-f]{8}$/), expect.stringMatching(/^zaris_take_[0-9a-f]{8}$/)])
      expect(raw[0]!.slice(-8)).not.toBe(raw[1]!.slice(-8))
      // As behind a pooler that gives the next call a server connection without the statement: Postgres
      // refuses it (26000, nothing ran), the commit goes through the full commit, and the adapter stops naming.
      await pool.query('DEALLOCATE ALL')
      const again = await a.commit([{ key: 'l', revision: null }], [{ type: 'set', key: 'l', value: null, ttl: 30_000 }])
      expect(again).toMatchObject({ ok: true, entries: [{ key: 'l' }] })
      expect(again.ok && (await a.commit([{ key: 'l', created: again.revision }], [{ type: 'delete', key: 'l' }])).ok).toBe(true)
      expect(await names()).toEqual([])
    } finally {
      await a.close()
      await pool.end()
    }
  })

  test("a lock's take and release with a caller's request id (a zaris node's client) are answered again, not applied twice", async () => {
    const a = await postgresAdapter({ url: db.server.url(ns()) })
    try {
      const take = () => a.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: 1, owner: 'o' }], { requestId: 'take-1' })
      const first = await take()
      expect(first.ok).toBe(true)
      expect(await take()).toEqual(first)
      // Contended now (a check by revision failed here): a caller's id is still never answered from a snapshot.
      expect((await a.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: 2 }])).ok).toBe(false)
      expect(await take()).toEqual(first)
      if (!first.ok) return
      const release = () => a.commit([{ key: 'k', created: first.revision }], [{ type: 'delete', key: 'k' }], { requestId: 'release-1' })
      const released = await release()
      expect(released).toMatchObject({ ok: true, deleted: ['k'] })
      expect(await release()).toEqual(released)
    } finally {
      await a.close()
    }
  })

  test("a lock's take or release whose answer is lost is sent again and answered, not applied twice", async () => {
    const proxy = await new FaultProxy(db.server.port).start()
    const name = ns()
    const a = await postgresAdapter({ url: db.server.url(name, proxy.port), listen: false })
    try {
      await a.commit([], [{ type: 'set', key: 'warm', value: 1 }])
      for (const key of ['a', 'b']) {
        // The first take of a key makes the statement known to the connection; the second is held.
        const t0 = await a.commit([{ key, revision: null }], [{ type: 'set', key, value: 0, owner: 'o' }])
        expect(t0.ok && (await a.commit([{ key, created: t0.revision }], [{ type: 'delete', key }])).ok).toBe(true)
        proxy.holdReplies('zaris_')
        const taking = a.commit([{ key, revision: null }], [{ type: 'set', key, value: 1, owner: 'o' }])
        await new Promise((r) => setTimeout(r, 300))
        expect(proxy.dropped).toBeGreaterThan(0)
        proxy.heal()
        const taken = await taking
        expect(taken).toMatchObject({ ok: true, entries: [{ key, owner: 'o' }] })
        if (!taken.ok) return
        expect(taken.entries[0]!.created).toBe(taken.revision)
        expect((await a.get(key))?.created).toBe(taken.revision)
        proxy.holdReplies('zaris_')
        const releasing = a.commit([{ key, created: taken.revision }], [{ type: 'delete', key }])
        await new Promise((r) => setTimeout(r, 300))
        proxy.heal()
        expect(await releasing).toMatchObject({ ok: true, deleted: [key] })
        expect(await a.get(key)).toBeUndefined()
        const logged = (await db.admin.query('SELECT type FROM zaris.events WHERE ns = $1 AND k = $2 ORDER BY revision', [name, Buffer.from(key, 'utf16le').swap16()])).rows
        expect(logged.map((r) => r.type)).toEqual(['p', 'd', 'p', 'd'])
      }
    } finally {
      await a.close()
      await proxy.stop()
    }
  })

  test('lock-shaped commits keep the log within its bound: it is pruned in a call of its own', async () => {
    const name = ns()
    const a = await postgresAdapter({ url: db.server.url(name), historySize: 50 })
    try {
      for (let i = 0; i < 400; i++) {
        const t = await a.commit([{ key: 'l', revision: null }], [{ type: 'set', key: 'l', value: null, owner: 'o' }])
        expect(t.ok && (await a.commit([{ key: 'l', created: t.revision }], [{ type: 'delete', key: 'l' }])).ok).toBe(true)
      }
      const count = async () => (await db.admin.query('SELECT count(*)::int AS n FROM zaris.events WHERE ns = $1', [name])).rows[0].n as number
      // historySize + max(100, historySize / 10), and the commits made while a pruning call ran.
      await until(async () => (await count()) <= 150 + 10)
      expect(await count()).toBeGreaterThanOrEqual(50)
    } finally {
      await a.close()
    }
  })

  test('a commit while Postgres cannot be reached is tried again, backing off from 25 ms up to 1 s, and applied once the way is open', async () => {
    const proxy = await new FaultProxy(db.server.port).start()
    const a = await postgresAdapter({ url: db.server.url(ns(), proxy.port), listen: false, timeout: 30_000 })
    try {
      await a.commit([], [{ type: 'set', key: 'warm', value: 0 }])
      proxy.drop()
      const tries = proxy.accepted
      const adding = a.commit([], [{ type: 'add', key: 'n', delta: 1 }])
      await sleep(800)
      // Tries at 0, 25, 75, 175, 375, 775 ms, a connection each: a handful, neither a loop nor one a second.
      expect(proxy.accepted - tries).toBeGreaterThanOrEqual(3)
      expect(proxy.accepted - tries).toBeLessThanOrEqual(10)
      proxy.pass()
      expect(await adding).toMatchObject({ ok: true, entries: [{ key: 'n', value: 1 }] })
      expect((await a.get('n'))?.value).toBe(1)
    } finally {
      await a.close()
      await proxy.stop()
    }
  })

  test('a commit Postgres refuses (a privilege) fails at once, UNAUTHORIZED, not tried again until the timeout', async () => {
    await db.admin.query(schemaSql())
    await db.admin.query("DO $$ BEGIN CREATE ROLE committer LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    await db.admin.query('GRANT USAGE ON SCHEMA zaris TO committer; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA zaris TO committer; GRANT USAGE ON ALL SEQUENCES IN SCHEMA zaris TO committer')
    await db.admin.query('REVOKE INSERT ON zaris.events FROM committer')
    const a = await postgresAdapter({ url: `postgres://committer@127.0.0.1:${db.server.port}/${db.server.database}?ns=${ns()}`, listen: false, createSchema: false, timeout: 10_000 })
    try {
      const t = performance.now()
      await expect(a.commit([], [{ type: 'set', key: 'k', value: 1 }])).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('refused commit') })
      // A lock's take (its one statement) and several ops (the general function): named the same.
      await expect(a.commit([{ key: 'l', revision: null }], [{ type: 'set', key: 'l', value: null, owner: 'o' }])).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('refused commit') })
      await expect(a.commit([], [{ type: 'set', key: 'k', value: 1 }, { type: 'delete', key: 'j' }])).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('refused commit') })
      expect(performance.now() - t).toBeLessThan(2_000)
    } finally {
      await a.close()
    }
  })

  test('a check likely to fail again (it failed here last time) is answered from a snapshot, without waiting for the namespace, also among other checks', async () => {
    const name = ns()
    const a = await postgresAdapter({ url: db.server.url(name), listen: false })
    const holder = new pg.Client({ connectionString: db.server.url() })
    await holder.connect()
    try {
      await a.commit([], [{ type: 'set', key: 'a', value: 1 }])
      expect((await a.commit([{ key: 'a', revision: 999 }], [{ type: 'set', key: 'x', value: 1 }])).ok).toBe(false)
      // Another transaction holds the namespace's row: a commit that must lock it waits.
      await holder.query('BEGIN')
      await holder.query('SELECT 1 FROM zaris.lock_store($1)', [name])
      const t = performance.now()
      const answer = await a.commit([{ key: 'b', revision: null }, { key: 'a', revision: 999 }], [{ type: 'set', key: 'x', value: 1 }])
      expect(performance.now() - t).toBeLessThan(1_000)
      expect(answer).toMatchObject({ ok: false, failed: [{ key: 'a', entry: { value: 1 } }] })
    } finally {
      await holder.query('ROLLBACK')
      await holder.end()
      await a.close()
    }
  })

  test("a lock's take and release are one call each: the log is pruned in a call of its own only once it is past its bound", async () => {
    const counted = countedPool(db.server.url())
    const a = await postgresAdapter({ pool: counted.pool, namespace: ns(), listen: false })
    try {
      await a.commit([], [{ type: 'set', key: 'warm', value: 0 }])
      const before = counted.calls()
      const t = await a.commit([{ key: 'l', revision: null }], [{ type: 'set', key: 'l', value: null, owner: 'o', ttl: 30_000 }])
      expect(t.ok && (await a.commit([{ key: 'l', created: t.revision }], [{ type: 'delete', key: 'l' }])).ok).toBe(true)
      await sleep(100)
      expect(counted.calls() - before).toBe(2)
    } finally {
      await a.close()
      await counted.pool.end()
    }
  })

  test("an entry's answer carries owner and ttl only when set; the adapter's request ids count from a random start", async () => {
    const name = ns()
    const a = await postgresAdapter({ url: db.server.url(name), listen: false })
    try {
      for (const ops of [[{ type: 'set' as const, key: 'k', value: 1 }], [{ type: 'set' as const, key: 'j', value: 1 }, { type: 'delete' as const, key: 'none' }]]) {
        const r = await a.commit([], ops)
        expect(r.ok && Object.keys(r.entries[0]!)).toEqual(['key', 'value', 'revision', 'created'])
      }
      // A count from 0 in every process would meet another process's ids in the log: a retry could be answered with its commit.
      const ids = (await db.admin.query('SELECT req::text AS req FROM zaris.events WHERE ns = $1 AND req IS NOT NULL', [name])).rows.map((r) => BigInt(r.req))
      expect(ids).toHaveLength(2)
      for (const id of ids) expect(id).toBeGreaterThan(2n ** 24n)
    } finally {
      await a.close()
    }
  })

  test('a value that is not JSON is refused naming its op', async () => {
    const a = await postgresAdapter({ url: db.server.url(ns()), listen: false })
    try {
      await expect(a.commit([], [{ type: 'set', key: 'k', value: 1 }, { type: 'set', key: 'j', value: Number.NaN }])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('ops[1].value') })
      expect(await a.get('k')).toBeUndefined()
    } finally {
      await a.close()
    }
  })

  test('fresh starts a new life in a commit of several ops too (the general function, not the one-op one)', async () => {
    const a = await postgresAdapter({ url: db.server.url(ns()) })
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
    const a = await postgresAdapter({ url: db.server.url(ns()) })
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

describe('reads', () => {
  // Nobody watches these namespaces, so nothing expires them but the reads themselves.
  test('a read expires what it finds due, also past the 500 a sweep takes by deadline: a get or a listing never shows an entry past its TTL', async () => {
    const fill = async () => {
      const a = await postgresAdapter({ url: db.server.url(ns()), listen: false })
      for (let i = 0; i < 6; i++) await a.commit([], Array.from({ length: 100 }, (_, j) => ({ type: 'set' as const, key: `many/${i * 100 + j}`, value: j, ttl: 30 })))
      // Due last of them all: a sweep of the namespace's 500 earliest does not reach it.
      await a.commit([], [{ type: 'set', key: 'late/z', value: 'z', ttl: 120 }])
      await new Promise((r) => setTimeout(r, 300))
      return a
    }
    const a = await fill()
    const b = await fill()
    try {
      expect(await a.get('late/z')).toBeUndefined()
      expect(await b.list('late/')).toEqual({ entries: [], more: false })
    } finally {
      await a.close()
      await b.close()
    }
  })

  test('a read of live entries is one call; one that finds an entry past its TTL expires it and reads again: three (checkouts of the pool, counted)', async () => {
    const counted = countedPool(db.server.url())
    const a = await postgresAdapter({ pool: counted.pool, namespace: ns(), listen: false })
    const calls = async (read: () => Promise<unknown>) => {
      const before = counted.calls()
      await read()
      return counted.calls() - before
    }
    try {
      await a.commit([], [{ type: 'set', key: 'p/plain', value: 1 }, { type: 'set', key: 'p/ttl', value: 2, ttl: 60_000 }])
      expect(await calls(() => a.get('p/plain'))).toBe(1)
      expect(await calls(() => a.get('p/ttl'))).toBe(1)
      expect(await calls(() => a.get('p/none'))).toBe(1)
      expect(await calls(() => a.list('p/'))).toBe(1)
      expect(await calls(() => a.list('p/', { limit: 1 }))).toBe(1)
      await a.commit([], [{ type: 'set', key: 'p/gone', value: 3, ttl: 30 }, { type: 'set', key: 'q/gone', value: 4, ttl: 400 }])
      await sleep(150)
      expect(await calls(() => a.list('p/'))).toBe(3)
      expect(await calls(() => a.list('p/'))).toBe(1)
      expect(await calls(() => a.get('q/gone'))).toBe(1)
      await sleep(400)
      expect(await calls(() => a.get('q/gone'))).toBe(3)
      expect(await calls(() => a.get('q/gone'))).toBe(1)
      // The store's revision, then one page of the log.
      expect(await calls(() => a.history!('', 0, { maxEvents: 10, maxBytes: Infinity }))).toBe(2)
    } finally {
      await a.close()
      await counted.pool.end()
    }
  })

  test('history: of a namespace never written, past 500 events (read in batches), and from exactly where the log was cut', async () => {
    const a = await postgresAdapter({ url: db.server.url(ns()), listen: false })
    const cutName = ns()
    const c = await postgresAdapter({ url: db.server.url(cutName), listen: false, historySize: 50 })
    const all = { maxEvents: 100_000, maxBytes: Infinity }
    try {
      expect(await a.history!('', 0, all)).toEqual({ events: [], through: 0, more: false })
      const base = await a.commit([], [{ type: 'set', key: 'base', value: 0 }])
      if (!base.ok) throw new Error('not set')
      for (let i = 0; i < 6; i++) await a.commit([], Array.from({ length: 100 }, (_, j) => ({ type: 'set' as const, key: `hh/${i}/${j}`, value: j })))
      const page = await a.history!('hh/', base.revision, all)
      expect(page.events).toHaveLength(600)
      expect(page.more).toBe(false)
      // Bytes as estimated from the keys and values: 2 000-character values, two to a 5 000-byte page.
      let after = base.revision
      for (let i = 0; i < 4; i++) await a.commit([], [{ type: 'set', key: `big/${i}`, value: 'v'.repeat(2_000) }])
      const sizes: number[] = []
      for (let more = true; more; ) {
        const p = await a.history!('big/', after, { maxEvents: 100, maxBytes: 5_000 })
        sizes.push(p.events.length)
        ;({ more, through: after } = p)
      }
      expect(sizes.filter((n) => n > 0)).toEqual([2, 2])
      // Pruned to the last 50 or so events: a read from where it was cut is whole, one from before it is refused.
      for (let i = 0; i < 200; i++) await c.commit([], [{ type: 'set', key: 'cut', value: i }])
      const { compacted } = (await db.admin.query('SELECT compacted::int FROM zaris.stores WHERE ns = $1', [cutName])).rows[0]
      expect(compacted).toBeGreaterThan(0)
      expect((await c.history!('cut', compacted, all)).events.length).toBeGreaterThan(0)
      await expect(c.history!('cut', compacted - 1, all)).rejects.toMatchObject({ code: 'COMPACTED' })
    } finally {
      await a.close()
      await c.close()
    }
  })

  test('a read Postgres refuses fails at once; one it cannot answer is tried again until the timeout, then fails UNAVAILABLE', async () => {
    // The tables, also when this test runs alone (running it again is harmless).
    await db.admin.query(schemaSql())
    await db.admin.query("DO $$ BEGIN CREATE ROLE reader LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    await db.admin.query('GRANT USAGE ON SCHEMA zaris TO reader; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA zaris TO reader; GRANT USAGE ON ALL SEQUENCES IN SCHEMA zaris TO reader')
    const name = ns()
    const proxy = await new FaultProxy(db.server.port).start()
    const refused = await postgresAdapter({ url: `postgres://reader@127.0.0.1:${db.server.port}/${db.server.database}?ns=${name}`, listen: false, createSchema: false })
    const cut = await postgresAdapter({ url: db.server.url(name, proxy.port), listen: false, timeout: 600, callTimeout: 300, pg: { connectionTimeoutMillis: 300 } })
    try {
      const readers = async () => (await db.admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE usename = 'reader' ORDER BY pid")).rows.map((r) => r.pid)
      const before = await readers()
      await db.admin.query('REVOKE SELECT ON zaris.entries FROM reader')
      let t = performance.now()
      await expect(refused.get('k')).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('refused get') })
      expect(performance.now() - t).toBeLessThan(1_000)
      // Its connection only refused a statement: kept in the pool, not opened again.
      expect(before).toHaveLength(1)
      await expect(refused.list('')).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('refused list') })
      expect(await readers()).toEqual(before)
      proxy.drop()
      t = performance.now()
      // A read changed nothing: its message does not say it may have been applied.
      await expect(cut.get('k')).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.not.stringContaining('applied') })
      expect(performance.now() - t).toBeGreaterThanOrEqual(500)
      expect(performance.now() - t).toBeLessThan(3_000)
      await db.admin.query('GRANT SELECT ON zaris.entries TO reader')
      // Each read names itself when refused: the log's head, the log, an expiry.
      const all = { maxEvents: 10, maxBytes: Infinity }
      for (const table of ['stores', 'events']) {
        await db.admin.query(`REVOKE SELECT ON zaris.${table} FROM reader`)
        await expect(refused.history!('', 0, all)).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('refused history') })
        await db.admin.query(`GRANT SELECT ON zaris.${table} TO reader`)
      }
      const owner = await postgresAdapter({ url: db.server.url(name), listen: false })
      await owner.commit([], [{ type: 'set', key: 'due', value: 1, ttl: 20 }])
      await owner.close()
      await sleep(100)
      await db.admin.query('REVOKE EXECUTE ON FUNCTION zaris.sweep(text, bytea[]) FROM PUBLIC')
      await expect(refused.get('due')).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('refused expiry') })
    } finally {
      await db.admin.query('GRANT EXECUTE ON FUNCTION zaris.sweep(text, bytea[]) TO PUBLIC')
      await db.admin.query('GRANT SELECT ON zaris.entries, zaris.stores, zaris.events TO reader')
      await refused.close()
      await cut.close()
      await proxy.stop()
    }
  })
})

describe('watch', () => {
  test('the log keeps historySize events: a watch from before them ends with COMPACTED', async () => {
    const a = await postgresAdapter({ url: db.server.url(ns()), historySize: 100 })
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

  test("a commit wakes its own process's watches at once: no NOTIFY, no poll due for a minute", async () => {
    const a = await postgresAdapter({ url: db.server.url(ns()), listen: false, pollInterval: 60_000 })
    try {
      const seen: WatchEvent[] = []
      await a.watch('own/', { event: (e) => seen.push(e), error() {} })
      await a.commit([], [{ type: 'set', key: 'own/1', value: 1 }])
      const t = await a.commit([{ key: 'own/l', revision: null }], [{ type: 'set', key: 'own/l', value: null, ttl: 30_000 }])
      await until(() => seen.length === 2, 10_000)
      expect(seen.map((e) => e.key)).toEqual(['own/1', 'own/l'])
      expect(t.ok).toBe(true)
    } finally {
      await a.close()
    }
  })

  for (const listen of [true, false]) {
    test(`watches are woken ${listen ? 'by NOTIFY' : 'by polling (listen: false)'} and miss nothing`, async () => {
      const url = db.server.url(ns())
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
