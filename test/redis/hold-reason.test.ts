/**
 * The end reason of a hold on Redis when a failed commit of its own tells it
 * before its watch does (RELIABILITY bug 7). The watch's events come on the
 * adapter's reader connection, the commit's answer on its command
 * connection, so either may come first; the commit's answer names what the
 * key carries when it ran (src/core/hold/end.ts), which may be a later state than
 * the first change. A TCP proxy holds back the holder's reader connection
 * to make the commit come first every time, and the model test's hold
 * checker (test/model/holds.ts) is run on what happened.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { Client, type WatchEvent } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { until } from '../conformance/util'
import { checkHolds, type HoldRecord, type StoreEvent } from '../model/holds'
import { TcpProxy } from './proxy'
import { LIBRARIES, named, using } from './clients'
import { startRedis, type RedisServer } from './server'

let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(async () => {
  await server?.dispose()
})

for (const library of LIBRARIES) test(`a renewal that learns of a steal before the watch does says LOST (the stealer had released), and the model test accepts it (${named(library)})`, async () => {
  const ns = `hr-${Math.random().toString(36).slice(2, 8)}`
  const proxy = await new TcpProxy(server.port).start()
  const holder = new Client(await redisAdapter({ url: using(proxy.url(ns), library) }), { id: 'holder' })
  const thief = new Client(await redisAdapter({ url: using(server.url(ns), library) }), { id: 'thief' })
  // What the store did, as the model test's observer records it.
  const observer = await redisAdapter({ url: using(server.url(ns), library) })
  const store: StoreEvent[] = []
  const unwatch = await observer.watch(
    'lock:',
    { event: (ev: WatchEvent) => store.push({ key: ev.key, kind: ev.type, revision: ev.revision, created: ev.created, owner: ev.owner, at: performance.now() }), error: () => {} },
    0,
  )

  const lock = (await holder.locks.acquire('lock:a', { ttl: 60_000, autoRenew: false }))!
  const record: HoldRecord = { lock, client: 'holder', key: lock.key, token: lock.token, grantedAt: performance.now() }
  lock.signal.addEventListener('abort', () => {
    record.abortedAt = performance.now()
    record.reason = (lock.signal.reason as { code: string }).code
  })
  // Reading the signal started the hold's watch; its reader connection opens once the watch is on.
  await until(() => proxy.connections === 2)
  proxy.holdRepliesOfNewest()

  const stolen = (await thief.locks.acquire('lock:a', { steal: true, ttl: 60_000 }))!
  await stolen.release()
  await until(() => store.length === 3) // the grant, the steal, the release
  expect(store.map((e) => e.kind === 'put' ? e.owner : e.kind)).toEqual(['holder', 'thief', 'delete'])

  expect(await lock.renew()).toBe(false)
  // The renewal found the key empty: the first change (the steal) is not what it read.
  expect(record.reason).toBe('LOST')
  expect(checkHolds([record], store, [], performance.now(), 300)).toEqual([])

  unwatch()
  await Promise.all([holder.close(), thief.close(), observer.close()])
  await proxy.stop()
})
