/**
 * Watch on the Redis adapter beyond the shared contract: history that is
 * gone, a watcher that falls behind the capped log, a dropped connection,
 * and many watchers joining while writers commit. Connections are stalled or
 * dropped for real by a TCP proxy between the watcher and redis-server.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { Adapter, WatchEvent } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { sleep, until } from '../conformance/util'
import { LIBRARIES, apart, named, using } from './clients'
import { TcpProxy } from './proxy'
import { startRedis, type RedisServer } from './server'

let server: RedisServer
beforeAll(async () => {
  // Small stream nodes, so that trimming with `MINID ~` follows a small history closely.
  server = await startRedis({ args: ['--stream-node-max-entries', '4'] })
})
afterAll(async () => {
  await server?.dispose()
})

let n = 0
const fresh = () => `w${++n}-${Math.random().toString(36).slice(2, 8)}`

function recorder() {
  const events: WatchEvent[] = []
  const errors: Error[] = []
  return { events, errors, sink: { event: (e: WatchEvent) => events.push(e), error: (e: Error) => errors.push(e) } }
}

async function commits(a: Adapter, count: number, key = (i: number) => `k/${i % 7}`): Promise<number[]> {
  const revs: number[] = []
  for (let i = 0; i < count; i++) {
    const r = await a.commit([], [{ type: 'set', key: key(i), value: i }])
    if (r.ok) revs.push(r.revision)
  }
  return revs
}

function consecutive(revisions: number[]): boolean {
  return revisions.every((r, i) => i === 0 || r === revisions[i - 1]! + 1)
}

for (const library of LIBRARIES) {
  const url = (ns: string, db?: number) => using(server.url(ns, db), library)

  describe(`history (${named(library)})`, () => {
    test('a watch from a revision older than the kept history is told with a CompactedError; a recent one replays', async () => {
      const a = await redisAdapter({ url: url(fresh()), historySize: 5 })
      const revs = await commits(a, 40)
      const old = recorder()
      const unwatchOld = await a.watch('', old.sink, revs[0])
      expect(old.errors).toHaveLength(1)
      expect(old.errors[0]).toMatchObject({ code: 'COMPACTED' })
      expect(old.events).toEqual([])
      unwatchOld()

      const recent = recorder()
      const unwatch = await a.watch('', recent.sink, revs[36])
      await until(() => recent.events.length === 3)
      expect(recent.events.map((e) => e.revision)).toEqual(revs.slice(37))
      expect(recent.errors).toEqual([])
      unwatch()
      await a.close()
    })

    test('a watch from a revision the store has not reached yet delivers only what comes after it', async () => {
      const a = await redisAdapter({ url: url(fresh()) })
      const [head] = await commits(a, 1)
      const r = recorder()
      const unwatch = await a.watch('', r.sink, head! + 3)
      const later = await commits(a, 5)
      await until(() => r.events.length === 2)
      await sleep(50)
      expect(r.events.map((e) => e.revision)).toEqual(later.slice(3))
      unwatch()
      await a.close()
    })
  })

  describe(`delivery under stress (${named(library)})`, () => {
    test('a watcher that falls behind the capped log is told (COMPACTED), never left with a silent gap', async () => {
      const ns = fresh()
      const proxy = await new TcpProxy(server.port).start()
      const watcher = await redisAdapter({ url: using(proxy.url(ns), library), historySize: 5 })
      const writer = await redisAdapter({ url: url(ns), historySize: 5 })
      const r = recorder()
      await watcher.watch('', r.sink)
      await commits(writer, 1)
      await until(() => r.events.length === 1)
      proxy.freeze() // the watcher reads nothing while 40 commits go by and the log is trimmed
      await commits(writer, 40)
      proxy.thaw()
      await until(() => r.errors.length === 1, 10_000)
      expect(r.errors[0]).toMatchObject({ code: 'COMPACTED', message: expect.stringContaining('fell behind') })
      // What was delivered before the error has no hole in it.
      expect(consecutive(r.events.map((e) => e.revision))).toBe(true)
      expect(r.events.length).toBeLessThan(41)
      await Promise.all([watcher.close(), writer.close()])
      await proxy.stop()
    })

    test('a dropped connection is not a gap: the watch resumes where it was, nothing lost or doubled', async () => {
      const ns = fresh()
      const proxy = await new TcpProxy(server.port).start()
      const watcher = await redisAdapter({ url: using(proxy.url(ns), library) })
      const writer = await redisAdapter({ url: url(ns) })
      const r = recorder()
      await watcher.watch('k/', r.sink)
      await commits(writer, 1)
      await until(() => r.events.length === 1)
      proxy.cut()
      const during = await commits(writer, 10)
      proxy.cut() // and once more while it reconnects
      const after = await commits(writer, 5)
      await until(() => r.events.length === 16, 10_000)
      await sleep(100)
      expect(r.errors).toEqual([])
      expect(r.events.map((e) => e.revision)).toEqual([during[0]! - 1, ...during, ...after])
      await Promise.all([watcher.close(), writer.close()])
      await proxy.stop()
    })

    test('watchers joining at random moments while two writers commit each see exactly their part of the log, in order', async () => {
      const ns = fresh()
      const [w1, w2, reader] = await Promise.all([1, 2, 3].map((i) => redisAdapter({ url: url(ns), redis: { connectionName: `s${i}` } })))
      const all = recorder()
      await reader!.watch('', all.sink, 0)
      const prefixes = ['a/', 'b/', '']
      const joined: Array<{ prefix: string; from?: number; r: ReturnType<typeof recorder> }> = []
      let last = 0
      const writing = Promise.all(
        [w1!, w2!].map(async (w, wi) => {
          for (let i = 0; i < 150; i++) {
            const key = `${'ab'[i % 2]}/${wi}-${i % 5}`
            const op = i % 11 === 10 ? { type: 'delete' as const, key } : { type: 'set' as const, key, value: i }
            const res = await w.commit([], [op])
            if (res.ok) last = Math.max(last, res.revision)
          }
        }),
      )
      const joining = (async () => {
        for (let i = 0; i < 30; i++) {
          await sleep(Math.random() * 15)
          const prefix = prefixes[i % 3]!
          const from = i % 2 === 0 ? Math.max(0, last - Math.floor(Math.random() * 40)) : undefined
          const r = recorder()
          // Half join with a fromRevision (often served from the reader's memory), half from "now".
          await reader!.watch(prefix, r.sink, from)
          joined.push({ prefix, from, r })
        }
      })()
      await Promise.all([writing, joining])
      await until(() => all.events.length > 0 && all.events[all.events.length - 1]!.revision === last, 10_000)
      await sleep(200)
      expect(all.errors).toEqual([])
      expect(consecutive(all.events.map((e) => e.revision))).toBe(true)
      for (const { prefix, from, r } of joined) {
        expect(r.errors).toEqual([])
        const expected = all.events.filter((e) => e.key.startsWith(prefix) && (from === undefined || e.revision > from))
        if (from !== undefined) {
          expect(r.events).toEqual(expected)
        } else {
          // From "now": a suffix of the log with nothing missing after its first event.
          const first = r.events[0]
          const tail = first ? expected.filter((e) => e.revision >= first.revision) : []
          expect(r.events).toEqual(tail)
        }
      }
      await Promise.all([w1!, w2!, reader!].map((a) => a.close()))
    }, 30_000)
  })
}
