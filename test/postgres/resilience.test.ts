/**
 * The Postgres adapter's ways around a failure, on a real Postgres: a
 * failed check on a contended key answered from a snapshot (no revision
 * taken), a caller's request id answered again (success and failure), a
 * retry that can no longer tell, and reads, watches and LISTEN through
 * connections that a proxy cuts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { WatchEvent } from 'zaris'
import { postgresAdapter } from 'zaris/postgres'
import { until } from '../conformance/util'
import { FaultProxy } from '../faults/proxy'
import { startPostgres, type PostgresServer } from './server'

let server: PostgresServer
let n = 0
const ns = () => `resilience-${++n}`
beforeAll(async () => {
  server = await startPostgres()
})
afterAll(async () => {
  await server?.dispose()
})

describe('commits', () => {
  test('a failed check takes the namespace (and a revision) once; after it, the key is contended and a failure costs a read', async () => {
    const a = await postgresAdapter({ url: server.url(ns()) })
    try {
      const held = await a.commit([], [{ type: 'set', key: 'lock', value: null, owner: 'other' }])
      const take = () => a.commit([{ key: 'lock', revision: null }], [{ type: 'set', key: 'lock', value: null, owner: 'me' }])
      expect((await take()).ok).toBe(false)
      expect((await take()).ok).toBe(false)
      expect((await take()).ok).toBe(false)
      const next = await a.commit([], [{ type: 'set', key: 'other', value: 1 }])
      // One revision for the first failure (it locked the namespace), none for the two from a snapshot.
      if (held.ok && next.ok) expect(next.revision - held.revision).toBe(2)
      // A success forgets the key: the next failure takes the namespace again.
      await a.commit([], [{ type: 'delete', key: 'lock' }])
      expect((await take()).ok).toBe(true)
      const after = await a.commit([], [{ type: 'set', key: 'other', value: 2 }])
      expect((await take()).ok).toBe(false)
      const last = await a.commit([], [{ type: 'set', key: 'other', value: 3 }])
      if (after.ok && last.ok) expect(last.revision - after.revision).toBe(2)
    } finally {
      await a.close()
    }
  })

  test("a caller's request id is answered again, success and failure alike, and applied once", async () => {
    const a = await postgresAdapter({ url: server.url(ns()) })
    try {
      const first = await a.commit([], [{ type: 'add', key: 'n', delta: 1 }, { type: 'set', key: 's', value: 'x', ttl: 60_000, owner: 'me' }, { type: 'delete', key: 'none' }], { requestId: 'req-aaaaaaaa' })
      const again = await a.commit([], [{ type: 'add', key: 'n', delta: 1 }, { type: 'set', key: 's', value: 'x', ttl: 60_000, owner: 'me' }, { type: 'delete', key: 'none' }], { requestId: 'req-aaaaaaaa' })
      expect(again).toMatchObject({ ok: true, revision: first.ok ? first.revision : -1, deleted: [] })
      if (again.ok) expect(again.entries.map((e) => [e.key, e.value, e.created, e.owner])).toEqual([['n', 1, first.ok ? first.revision : -1, undefined], ['s', 'x', first.ok ? first.revision : -1, 'me']])
      expect((await a.get('n'))?.value).toBe(1)
      const refused = await a.commit([{ key: 'gate', revision: 5 }], [{ type: 'set', key: 'g', value: 1 }], { requestId: 'req-bbbbbbbb' })
      expect(refused).toEqual({ ok: false, failed: [{ key: 'gate', entry: undefined }] })
      await a.commit([], [{ type: 'set', key: 'gate', value: 0 }])
      // The same id again: the kept failure, although the check would now fail otherwise too; nothing written.
      expect(await a.commit([{ key: 'gate', revision: 5 }], [{ type: 'set', key: 'g', value: 1 }], { requestId: 'req-bbbbbbbb' })).toMatchObject({ ok: false })
      expect(await a.get('g')).toBeUndefined()
    } finally {
      await a.close()
    }
  })

  test("a commit whose answer was lost, retried after the log was pruned past where it started: UNAVAILABLE, it cannot tell", async () => {
    const namespace = ns()
    const proxy = await new FaultProxy(server.port).start()
    const through = await postgresAdapter({ url: server.url(namespace, proxy.port), listen: false, timeout: 30_000 })
    const direct = await postgresAdapter({ url: server.url(namespace), historySize: 20 })
    try {
      await through.commit([], [{ type: 'set', key: 'k', value: 0 }])
      // A failed commit since: it tells nothing of where the log stands (no revision), and must not be taken to.
      expect((await through.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: 1 }])).ok).toBe(false)
      proxy.holdReplies('commit')
      const lost = through.commit([], [{ type: 'add', key: 'n', delta: 1 }])
      await until(() => proxy.dropped > 0)
      // Past historySize and the slack pruning allows (100 events): the log drops the first attempt's row.
      for (let i = 0; i < 150; i++) await direct.commit([], [{ type: 'set', key: 'k', value: i }])
      proxy.heal()
      const err = await lost.catch((e: unknown) => e)
      expect(err).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('cannot tell') })
      // What Postgres said, for whoever looks further.
      expect((err as Error).cause).toMatchObject({ cause: { code: 'ZR003' } })
      // It was applied (once): the retry only could not say so.
      expect((await direct.get('n'))?.value).toBe(1)
    } finally {
      await through.close()
      await direct.close()
      await proxy.stop()
    }
  })
})

describe('cut connections', () => {
  test('reads are retried, watches read on from their cursor, and LISTEN comes back', async () => {
    const namespace = ns()
    const proxy = await new FaultProxy(server.port).start()
    const through = await postgresAdapter({ url: server.url(namespace, proxy.port), pollInterval: 50 })
    const writer = await postgresAdapter({ url: server.url(namespace) })
    try {
      const seen: WatchEvent[] = []
      await through.watch('w/', { event: (e) => seen.push(e), error() {} })
      await until(() => through.listening, 5_000)
      const revisions: number[] = []
      const write = async (i: number) => {
        const r = await writer.commit([], [{ type: 'set', key: `w/${i}`, value: i }])
        if (r.ok) revisions.push(r.revision)
      }
      await write(0)
      proxy.drop()
      await write(1)
      // A read while every connection is refused: retried until the way is open again.
      const reading = through.get('w/1')
      await new Promise((r) => setTimeout(r, 300))
      proxy.pass()
      expect((await reading)?.value).toBe(1)
      await write(2)
      await until(() => seen.length === 3, 10_000)
      expect(seen.map((e) => e.revision)).toEqual(revisions)
      await until(() => through.listening, 10_000)
      proxy.cut()
      await write(3)
      await until(() => seen.length === 4, 10_000)
      expect(seen.map((e) => e.revision)).toEqual(revisions)
    } finally {
      await through.close()
      await writer.close()
      await proxy.stop()
    }
  })
})
