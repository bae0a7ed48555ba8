/**
 * redis-server killed with SIGKILL and started again on the same port and
 * directory. With `appendonly yes` + `appendfsync always`, every acknowledged
 * commit survives and fencing tokens keep rising — seen by the clients that
 * reconnect and by clients that never saw the old revisions. Without
 * persistence, Redis forgets everything: the docs' warning, shown here, and
 * what zaris still does about it (connected clients keep tokens rising;
 * watchers are told).
 */
import { afterEach, describe, expect, test } from 'vitest'
import { connect, type Client, type WatchEvent } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { until } from '../conformance/util'
import { LIBRARIES, apart, named, using } from './clients'
import { RedisServer } from './server'

const servers: RedisServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.dispose()))
})

let n = 0
const fresh = () => `r${++n}-${Math.random().toString(36).slice(2, 8)}`
for (const library of LIBRARIES) {
  /** A client on a connection of its own, that has seen no revision: what a new process would get. */
  const newProcess = (server: RedisServer, ns: string) => connect(using(server.url(ns), library), { redis: apart(library, `fresh-${fresh()}`) })

  describe(`redis-server restarts (${named(library)})`, () => {
    test('appendonly yes + appendfsync always: after kill -9 and restart, acknowledged writes are there and tokens keep rising', async () => {
      const server = await new RedisServer({ durable: true }).start()
      servers.push(server)
      const ns = fresh()
      const client = await connect(using(server.url(ns), library))
      const tokens: number[] = []
      const positions = await redisAdapter({ url: using(server.url(ns), library), redis: apart(library, 'positions') })
      const { epoch } = await positions.position()

      for (let round = 0; round < 3; round++) {
        const lock = (await client.locks.acquire('lock:job', { ttl: 60_000, autoRenew: false }))!
        expect(lock).not.toBeNull()
        tokens.push(lock.token)
        await client.put('job:result', { round, token: lock.token }, { fence: lock })

        // Commits in flight while the server dies: each is either acknowledged (and then durable) or refused.
        const acked: number[] = []
        let writing = true
        const writer = (async () => {
          for (let i = 0; writing; i++) {
            try {
              const e = await client.put('counter', i)
              acked.push(e.revision)
            } catch (err) {
              expect(err).toMatchObject({ code: 'UNAVAILABLE' })
            }
          }
        })()
        await until(() => acked.length >= 20)
        await server.kill()
        writing = false
        await server.start()
        await writer

        // A client that never saw the old revisions: what survived is what was acknowledged.
        const other = await newProcess(server, ns)
        const result = await other.get('job:result')
        expect(result?.value).toEqual({ round, token: lock.token })
        expect(await other.locks.holder('lock:job')).toMatchObject({ token: lock.token })
        expect((await other.get('counter'))!.revision).toBeGreaterThanOrEqual(Math.max(...acked))
        const next = await other.put('probe', round)
        expect(next.revision).toBeGreaterThan(Math.max(...acked, lock.token))
        await other.close()

        // The holder reconnected by itself: its lock and its fenced writes still work.
        await client.put('job:result', { round, token: lock.token, after: true }, { fence: lock })
        expect(await lock.release()).toBe(true)
      }
      // The same store: its epoch survived the restarts.
      expect((await positions.position()).epoch).toBe(epoch)
      await positions.close()
      const final = await newProcess(server, ns)
      const last = (await final.locks.acquire('lock:job', { autoRenew: false }))!
      tokens.push(last.token)
      await final.close()
      await client.close()
      expect(tokens.every((t, i) => i === 0 || t > tokens[i - 1]!)).toBe(true)
      console.log(`[redis restart] tokens across 3 kill -9 restarts (appendfsync always): ${tokens.join(' < ')}`)
    }, 60_000)

    test('without persistence, Redis forgets: a new client starts over, a connected one keeps its tokens rising and its watchers are told', async () => {
      const server = await new RedisServer().start()
      servers.push(server)
      const ns = fresh()
      const client: Client = await connect(using(server.url(ns), library))
      const watcher = await redisAdapter({ url: using(server.url(ns), library), redis: apart(library, 'watcher') })
      const events: WatchEvent[] = []
      const errors: Error[] = []
      await watcher.watch('', { event: (e) => events.push(e), error: (e) => errors.push(e) })
      const lock = (await client.locks.acquire('lock:x', { ttl: 60_000, autoRenew: false }))!
      for (let i = 0; i < 5; i++) await client.put('k', i)
      await until(() => events.length === 6)
      const before = (await client.get('k'))!.revision
      const { epoch } = await watcher.position()

      await server.kill()
      await server.start()
      expect((await watcher.position()).epoch).not.toBe(epoch)

      // The risk the docs describe: a process that never saw the old store gets revision 1 again.
      const stranger = await newProcess(server, ns)
      expect(await stranger.get('k')).toBeUndefined()
      expect(await stranger.locks.holder('lock:x')).toBeUndefined()
      expect((await stranger.put('s', 1)).revision).toBe(1)

      // The connected client's hold went with the store: its renewal finds nothing, LOST (not EXPIRED).
      expect(await lock.renew()).toBe(false)
      expect(lock.held).toBe(false)
      expect((lock.signal.reason as { code: string }).code).toBe('LOST')

      // A client that stayed connected never sees a revision go back, and its new token beats its old one.
      const after = await client.put('k', 'after')
      expect(after.revision).toBeGreaterThan(before)
      const again = (await client.locks.acquire('lock:y', { autoRenew: false }))!
      expect(again.token).toBeGreaterThan(lock.token)
      // From then on, everyone's revisions rise past it.
      expect((await stranger.put('s', 2)).revision).toBeGreaterThan(after.revision)

      // The watcher had seen the lost history: it is told, not left believing it.
      await until(() => errors.length === 1, 10_000)
      expect(errors[0]).toMatchObject({ code: 'COMPACTED', message: expect.stringMatching(/lost|started over/) })
      await Promise.all([client.close(), stranger.close(), watcher.close()])
    }, 30_000)
  })
}
