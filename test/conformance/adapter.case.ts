/**
 * The adapter contract, tested on the raw adapter: revisions, created, checks,
 * atomicity, TTL expiry, watch order and replay. Runs in Node and the browser.
 */
import { expect } from 'vitest'
import type { Adapter, WatchEvent } from 'zaris'
import type { FixtureFactory } from './fixture'
import { collect, eventually, late, notChecked, onFreshAdapter, rule, sleep, until, type Named } from './util'

export function adapterCases(factory: FixtureFactory, t: Named): void {
  const withAdapter = onFreshAdapter(factory)

  t.group('adapter contract', () => {
    t('get of a missing key is undefined; a set is read back with revision and created', withAdapter(async (a) => {
      expect(await a.get('missing')).toBeUndefined()
      const r = await a.commit([], [{ type: 'set', key: 'k', value: { n: 1, s: 'x', l: [true, null] } }])
      expect(r.ok).toBe(true)
      if (!r.ok) return
      expect(r.revision).toBeGreaterThan(0)
      expect(r.entries).toHaveLength(1)
      expect(r.entries[0]).toMatchObject({ key: 'k', value: { n: 1, s: 'x', l: [true, null] }, revision: r.revision, created: r.revision })
      expect(await a.get('k')).toMatchObject({ key: 'k', value: { n: 1, s: 'x', l: [true, null] }, revision: r.revision, created: r.revision })
    }))

    t('revision rises strictly across commits, deletes and expiry', withAdapter(async (a) => {
      const revs: number[] = []
      for (let i = 0; i < 5; i++) {
        const r = await a.commit([], [{ type: 'set', key: `k${i % 2}`, value: i }])
        if (r.ok) revs.push(r.revision)
      }
      const d = await a.commit([], [{ type: 'delete', key: 'k0' }])
      if (d.ok) revs.push(d.revision)
      const ends: WatchEvent[] = []
      const unwatch = await a.watch('short', { event: (e) => ends.push(e), error: () => {} })
      const short = await a.commit([], [{ type: 'set', key: 'short', value: 1, ttl: 50 }])
      if (!short.ok) throw new Error('commit failed')
      // Recorded, not only hidden from reads: a store may hide an entry past its
      // deadline before its timer writes the expiry's revision.
      const told = await eventually(() => ends.some((e) => e.type === 'expire'), 120 + late(a))
      unwatch()
      expect(told, rule('expiry-revision', `the expiry of "short" (TTL 50 ms, set at revision ${short.revision}) was not told to a watcher within ${120 + late(a)} ms: an expiry takes a revision of its own, after the write it ends, and is told as expire`)).toBe(true)
      expect(await a.get('short')).toBeUndefined()
      const after = await a.commit([], [{ type: 'set', key: 'k2', value: 1 }])
      if (after.ok) revs.push(after.revision)
      expect(revs).toHaveLength(7)
      for (let i = 1; i < revs.length; i++) expect(revs[i], rule('revision', `commit ${i + 1} of 7 was answered revision ${revs[i]}, not above ${revs[i - 1]}`)).toBeGreaterThan(revs[i - 1]!)
      const expiry = ends.find((e) => e.type === 'expire')!.revision
      // The expiry took a revision of its own between the set of `short` and `k2`.
      expect(expiry > short.revision && expiry < revs[6]!, rule('expiry-revision', `the expiry of "short" was reported at revision ${expiry}: not a revision of its own between its set (${short.revision}) and the next commit (${revs[6]})`)).toBe(true)
    }))

    t('an overwrite keeps created; a delete ends the life; fresh starts a new one', withAdapter(async (a) => {
      const r1 = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
      const r2 = await a.commit([], [{ type: 'set', key: 'k', value: 2 }])
      if (!r1.ok || !r2.ok) throw new Error('commits failed')
      expect(r2.entries[0], rule('new-life', 'an overwrite (no owner on either side) keeps created')).toMatchObject({ revision: r2.revision, created: r1.revision })
      const r3 = await a.commit([], [{ type: 'set', key: 'k', value: 3, fresh: true }])
      if (!r3.ok) throw new Error('commit failed')
      expect(r3.entries[0]!.created, rule('new-life', 'a set with fresh starts a new life')).toBe(r3.revision)
      const del = await a.commit([], [{ type: 'delete', key: 'k' }])
      expect(del.ok && del.deleted).toEqual(['k'])
      const r4 = await a.commit([], [{ type: 'set', key: 'k', value: 4 }])
      if (!r4.ok) throw new Error('commit failed')
      expect(r4.entries[0]!.created, rule('new-life', 'a set after a delete starts a new life')).toBe(r4.revision)
      const none = await a.commit([], [{ type: 'delete', key: 'never' }])
      expect(none.ok && none.deleted).toEqual([])
    }))

    t('owner and ttl are stored and read back', withAdapter(async (a) => {
      await a.commit([], [{ type: 'set', key: 'lock', value: null, ttl: 5_000, owner: 'me' }])
      const e = await a.get('lock')
      expect(e?.owner).toBe('me')
      expect(e?.ttl).toBeGreaterThan(3_000)
      expect(e?.ttl).toBeLessThanOrEqual(5_000)
      await a.commit([], [{ type: 'set', key: 'plain', value: 'v' }])
      const p = await a.get('plain')
      expect(p?.owner).toBeUndefined()
      expect(p?.ttl).toBeUndefined()
    }))

    t('a failed check writes nothing and returns the current entries of the failed checks', withAdapter(async (a) => {
      const r1 = await a.commit([], [{ type: 'set', key: 'a', value: 1 }])
      if (!r1.ok) throw new Error('commit failed')
      const r = await a.commit(
        [{ key: 'a', revision: r1.revision }, { key: 'b', revision: 999 }],
        [{ type: 'set', key: 'a', value: 2 }, { type: 'set', key: 'c', value: 3 }],
      )
      expect(r.ok, rule('checks', 'a commit whose check on "b" (revision 999, absent) fails was applied')).toBe(false)
      if (r.ok) return
      expect(r.failed).toEqual([{ key: 'b', entry: undefined }])
      expect((await a.get('a'))?.value, rule('checks', 'a commit whose check failed wrote "a"')).toBe(1)
      expect(await a.get('c'), rule('checks', 'a commit whose check failed wrote "c"')).toBeUndefined()

      const absent = await a.commit([{ key: 'a', revision: null }], [{ type: 'set', key: 'a', value: 9 }])
      expect(absent.ok, rule('checks', 'a create-if-absent over a live entry was applied')).toBe(false)
      if (!absent.ok) expect(absent.failed[0]).toMatchObject({ key: 'a', entry: { key: 'a', value: 1, revision: r1.revision } })
      // A delete's check holds it back like any other op's (a fenced or ifRevision delete).
      const byRevision = await a.commit([{ key: 'a', revision: r1.revision + 1 }], [{ type: 'delete', key: 'a' }])
      expect(byRevision.ok, rule('checks', 'a delete whose check (revision) fails was applied: a delete must honour its checks as a set does')).toBe(false)
      const byCreated = await a.commit([{ key: 'a', created: r1.revision + 1 }], [{ type: 'delete', key: 'a' }])
      expect(byCreated.ok, rule('checks', 'a delete whose check (created) fails was applied')).toBe(false)
      expect((await a.get('a'))?.value, rule('checks', 'a delete whose check failed removed the entry')).toBe(1)
      const ok = await a.commit([{ key: 'a', created: r1.revision }, { key: 'z', created: null }], [{ type: 'delete', key: 'a' }])
      expect(ok.ok, rule('checks', 'a delete whose checks hold was refused')).toBe(true)
    }))

    t('every entry of one commit carries the same revision', withAdapter(async (a) => {
      const r = await a.commit([], [
        { type: 'set', key: 'x/1', value: 1 },
        { type: 'set', key: 'x/2', value: 2 },
        { type: 'set', key: 'y', value: 3 },
      ])
      if (!r.ok) throw new Error('commit failed')
      expect(r.entries.map((e) => e.revision)).toEqual([r.revision, r.revision, r.revision])
      expect((await a.get('x/2'))?.revision).toBe(r.revision)
    }))

    t('list returns the live entries of a prefix, sorted by key', withAdapter(async (a) => {
      await a.commit([], [
        { type: 'set', key: 'p/b', value: 2 },
        { type: 'set', key: 'p/a', value: 1 },
        { type: 'set', key: 'p/c', value: 3, ttl: 40 },
        { type: 'set', key: 'q/a', value: 4 },
      ])
      await until(async () => !(await a.list('p/')).entries.some((e) => e.key === 'p/c'), 100 + late(a))
      const list = await a.list('p/')
      expect(list.more).toBe(false)
      expect(list.entries.map((e) => [e.key, e.value])).toEqual([['p/a', 1], ['p/b', 2]])
      expect((await a.list('')).entries.map((e) => e.key)).toEqual(['p/a', 'p/b', 'q/a'])
    }))

    t('list pages: sorted by UTF-16 code units, each after the last key of the one before, at most limit, more exactly while entries follow', withAdapter(async (a) => {
      // U+1F600 is a surrogate pair: in UTF-16 order it sorts below U+E000 and U+FFEF (in code point or UTF-8 order, above).
      // 'pg/' is a key of its own prefix: first in a listing, and past once it is the `after`.
      const keys = ['pg/', 'pg/b', 'pg/a', 'pg/ab', 'pg/a/1', 'pg/\u00e9', 'pg/\ud83d\ude00', 'pg/\ue000', 'pg/\uffef', 'pg/c', 'pgx', 'pf/z']
      await a.commit([], keys.map((key, i) => ({ type: 'set' as const, key, value: i })))
      await a.commit([], [{ type: 'set', key: 'pg/b2', value: 'gone soon', ttl: 40 }, { type: 'set', key: 'pg/d', value: 'deleted' }])
      await a.commit([], [{ type: 'delete', key: 'pg/d' }])
      await until(async () => !(await a.list('pg/')).entries.some((e) => e.key === 'pg/b2'), 100 + late(a))
      const want = keys.filter((k) => k.startsWith('pg/')).sort()
      expect(want.indexOf('pg/\ud83d\ude00')).toBeLessThan(want.indexOf('pg/\ue000'))
      for (const limit of [1, 2, 3, want.length, want.length + 1]) {
        const got: string[] = []
        let after: string | undefined
        for (let pages = 1; ; pages++) {
          const page = await a.list('pg/', after === undefined ? { limit } : { after, limit })
          expect(page.entries.length, `limit ${limit}, page ${pages}`).toBeLessThanOrEqual(limit)
          // No empty page after the first: \`more\` said entries follow only when they did.
          if (pages > 1) expect(page.entries.length, `limit ${limit}, page ${pages}`).toBeGreaterThan(0)
          got.push(...page.entries.map((e) => e.key))
          if (!page.more) break
          after = page.entries.at(-1)!.key
          expect(pages).toBeLessThan(3 * want.length)
        }
        expect(got, `limit ${limit}`).toEqual(want)
      }
      const keysOf = async (options: { after?: string; limit?: number }) => (await a.list('pg/', options)).entries.map((e) => e.key)
      // \`after\` need not be a key of the store; one before the prefix starts at it; one past it gives nothing.
      expect(await keysOf({ after: 'pg/aa' })).toEqual(want.filter((k) => k > 'pg/aa'))
      expect(await keysOf({ after: 'pa' })).toEqual(want)
      expect(await keysOf({ after: 'pg/' })).toEqual(want.filter((k) => k > 'pg/'))
      expect(await keysOf({ after: 'pg/', limit: 1 })).toEqual(['pg/a'])
      expect(await a.list('pg/', { after: 'pz' })).toEqual({ entries: [], more: false })
      expect(await a.list('pg/', { after: 'pg/\uffef' })).toEqual({ entries: [], more: false })
      await expect(a.list('pg/', { limit: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      await expect(a.list('pg/', { limit: 1.5 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      await expect(a.list('pg/', { after: 'pg/\ud800' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    }))

    t('capabilities are declared exactly when their members are implemented', withAdapter(async (a) => {
      const caps = a.capabilities ?? {}
      expect(caps.history === true, rule('capabilities', 'capabilities.history is declared exactly when history() is implemented')).toBe(typeof a.history === 'function')
      expect(caps.ownerGone === true, rule('capabilities', 'capabilities.ownerGone is declared exactly when ownerGone() and registerOwner() are implemented')).toBe(typeof a.ownerGone === 'function' && typeof a.registerOwner === 'function')
      if (caps.ttlGranularity !== undefined) expect(caps.ttlGranularity, rule('capabilities', 'ttlGranularity is a number of ms >= 1')).toBeGreaterThanOrEqual(1)
    }))

    t('capability history: pages of the change log, cut between revisions, the same events a watch replays', withAdapter(async (a) => {
      if (!a.history) notChecked('the adapter does not declare capability history')
      const base = await a.commit([], [{ type: 'set', key: 'base', value: 0 }])
      if (!base.ok) throw new Error('commit failed')
      for (let i = 0; i < 12; i++) {
        await a.commit([], [{ type: 'set', key: `h/${i % 3}`, value: i }, { type: 'set', key: `o/${i}`, value: 'x'.repeat(i * 50) }])
        if (i % 4 === 3) await a.commit([], [{ type: 'delete', key: `h/${i % 3}` }])
      }
      // A revision of two events: a page never splits it, whatever its limits.
      await a.commit([], [{ type: 'set', key: 'h/pair/1', value: 1 }, { type: 'set', key: 'h/pair/2', value: 2 }])
      const last = await a.commit([], [{ type: 'set', key: 'h/end', value: 'end' }])
      if (!last.ok) throw new Error('commit failed')
      // A commit outside the prefix: a last page is complete through the store's revision, past its last event.
      const tail = await a.commit([], [{ type: 'set', key: 'o/tail', value: 'x' }])
      if (!tail.ok) throw new Error('commit failed')
      const reference: WatchEvent[] = []
      const unwatch = await a.watch('h/', { event: (e) => reference.push(e), error: () => {} }, base.revision)
      await until(() => reference.at(-1)?.revision === last.revision)
      for (const limits of [{ maxEvents: 1, maxBytes: Infinity }, { maxEvents: 1_000, maxBytes: 200 }, { maxEvents: 1_000, maxBytes: Infinity }]) {
        const got: WatchEvent[] = []
        let after = base.revision
        let pagesRead = 0
        for (let pages = 0; ; pages++) {
          const page = await a.history('h/', after, limits)
          pagesRead++
          expect(page.through).toBeGreaterThanOrEqual(after)
          // Whole revisions only: nothing past `through`, nothing at or before `after`.
          for (const e of page.events) expect(e.revision > after && e.revision <= page.through).toBe(true)
          // At most maxEvents, passed only by the rest of the page's last revision.
          const lastRevision = page.events.at(-1)?.revision
          expect(page.events.filter((e) => e.revision !== lastRevision).length, `limits ${JSON.stringify(limits)}`).toBeLessThan(limits.maxEvents)
          got.push(...page.events)
          if (!page.more) {
            expect(page.through).toBe(tail.revision)
            break
          }
          expect(page.through).toBeGreaterThan(after)
          after = page.through
          expect(pages).toBeLessThan(100)
        }
        expect(got).toEqual(reference)
        // 200 bytes hold a few of these events, as any store estimates them, not all of them.
        if (limits.maxBytes === 200) expect(pagesRead, 'pages of at most 200 bytes').toBeGreaterThan(1)
      }
      unwatch()
    }))

    t('keys like __proto__ and constructor are ordinary keys and values', withAdapter(async (a) => {
      const value = JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}')
      await a.commit([], [{ type: 'set', key: '__proto__', value }, { type: 'set', key: 'constructor', value: 'c' }])
      const e = await a.get('__proto__')
      expect(Object.keys(e!.value as object).sort()).toEqual(['__proto__', 'constructor'])
      expect((await a.get('constructor'))?.value).toBe('c')
      expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    }))

    t('an entry expires at its TTL: absent to reads and checks, reported once as expire', withAdapter(async (a) => {
      const events: WatchEvent[] = []
      const unwatch = await a.watch('ttl/', { event: (e) => events.push(e), error: () => {} })
      const r = await a.commit([], [{ type: 'set', key: 'ttl/k', value: 1, ttl: 80 }])
      if (!r.ok) throw new Error('commit failed')
      await until(async () => (await a.get('ttl/k')) === undefined, 160 + late(a))
      const create = await a.commit([{ key: 'ttl/k', revision: null }], [{ type: 'set', key: 'ttl/other', value: 1 }])
      expect(create.ok, rule('expiry', 'a check that the lapsed key is absent failed')).toBe(true)
      await eventually(() => events.some((e) => e.type === 'expire'), 1_000 + late(a))
      await sleep(50)
      unwatch()
      const expires = events.filter((e) => e.type === 'expire')
      expect(expires, rule('expiry-revision', 'an expiry is reported to watchers exactly once')).toHaveLength(1)
      expect(expires[0]).toMatchObject({ key: 'ttl/k' })
      expect(expires[0]!.revision, rule('expiry-revision', 'an expiry takes a revision above the write it ends')).toBeGreaterThan(r.revision)
    }))

    t('expiry happens with nobody reading or writing', withAdapter(async (a) => {
      const events: WatchEvent[] = []
      const unwatch = await a.watch('idle/', { event: (e) => events.push(e), error: () => {} })
      await a.commit([], [{ type: 'set', key: 'idle/k', value: 1, ttl: 60 }])
      await until(() => events.some((e) => e.type === 'expire'), 3_000 + late(a))
      unwatch()
      expect(events.map((e) => e.type)).toEqual(['put', 'expire'])
    }))

    t('watch delivers put, delete and expire of a prefix in revision order', withAdapter(async (a) => {
      const events: WatchEvent[] = []
      const unwatch = await a.watch('w/', { event: (e) => events.push(e), error: () => {} })
      await a.commit([], [{ type: 'set', key: 'w/a', value: 1, owner: 'o1' }])
      await a.commit([], [{ type: 'set', key: 'other', value: 1 }])
      await a.commit([], [{ type: 'set', key: 'w/b', value: 2, ttl: 50 }])
      await a.commit([], [{ type: 'delete', key: 'w/a' }])
      await until(() => events.length >= 4, 3_000 + late(a))
      unwatch()
      expect(events.slice(0, 2).map((e) => [e.type, e.key])).toEqual([['put', 'w/a'], ['put', 'w/b']])
      // A slow store may expire w/b before the delete of w/a lands; either order is a valid history.
      expect(events.slice(2).map((e) => `${e.type} ${e.key}`).sort()).toEqual(['delete w/a', 'expire w/b'])
      expect(events[0]).toMatchObject({ value: 1, owner: 'o1', created: events[0]!.revision })
      expect(events[0]!.ttl, rule('watch', 'a put event carries the TTL it was written with, and none when it had none')).toBeUndefined()
      expect(events[1], rule('watch', 'a put event carries the TTL it was written with')).toMatchObject({ value: 2, ttl: 50 })
      for (let i = 1; i < events.length; i++) expect(events[i]!.revision).toBeGreaterThan(events[i - 1]!.revision)
    }))

    t('watch from a revision replays what came after it, then follows', withAdapter(async (a) => {
      const r1 = await a.commit([], [{ type: 'set', key: 'h/a', value: 1 }])
      await a.commit([], [{ type: 'set', key: 'h/b', value: 2 }])
      await a.commit([], [{ type: 'delete', key: 'h/a' }])
      if (!r1.ok) throw new Error('commit failed')
      const events: WatchEvent[] = []
      const unwatch = await a.watch('h/', { event: (e) => events.push(e), error: () => {} }, r1.revision)
      await a.commit([], [{ type: 'set', key: 'h/c', value: 3 }])
      await until(() => events.length >= 3)
      unwatch()
      expect(events.map((e) => [e.type, e.key])).toEqual([['put', 'h/b'], ['delete', 'h/a'], ['put', 'h/c']])
    }))

    t('a watcher on another adapter of the same store sees the events; unsubscribe stops them', withAdapter(async (a, another) => {
      const b = await another()
      const events: WatchEvent[] = []
      const unwatch = await b.watch('x/', { event: (e) => events.push(e), error: () => {} })
      await a.commit([], [{ type: 'set', key: 'x/1', value: 1 }])
      await until(() => events.length === 1)
      unwatch()
      await a.commit([], [{ type: 'set', key: 'x/2', value: 2 }])
      await sleep(100)
      expect(events.map((e) => e.key)).toEqual(['x/1'])
      await b.close()
    }))

    t('of many racing create-if-absent commits on one key, exactly one wins', withAdapter(async (a, another) => {
      const adapters = [a, ...(await Promise.all([another(), another(), another()]))]
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          adapters[i % adapters.length]!.commit([{ key: 'race', revision: null }], [{ type: 'set', key: 'race', value: i }]),
        ),
      )
      const won = results.filter((r) => r.ok).length
      expect(won, rule('atomic', `${won} of 16 racing create-if-absent commits on one key succeeded: a commit's checks and writes must be one step (checks read under the commit's lock)`)).toBe(1)
      await Promise.all(adapters.slice(1).map((x) => x.close()))
    }))

    t('a closed adapter refuses calls with ClosedError', withAdapter(async (_a, another) => {
      const b = await another()
      await b.close()
      await expect(b.get('k')).rejects.toMatchObject({ code: 'CLOSED' })
      await b.close() // twice is harmless
    }))
  })
}
