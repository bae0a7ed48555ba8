/**
 * `zaris serve --redis URL`: two node processes in front of one real
 * redis-server serve one store, so a client given both addresses keeps its
 * lock and its watch when the node it talks to is killed. On each client
 * library (`--redis redis://…?client=redis` for node-redis).
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { connect, type WatchEvent } from 'zaris'
import { LIBRARIES, named, using } from '../redis/clients'
import { RedisServer } from '../redis/server'
import { startNode, type NodeProcess } from './node-process'

let redis: RedisServer
const nodes: NodeProcess[] = []
beforeAll(async () => {
  redis = await new RedisServer().start()
})
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.kill9()))
  await redis?.dispose()
})

for (const library of LIBRARIES) test(`two nodes on one Redis are one lock domain, and a client fails over between them (${named(library)})`, async () => {
  const url = using(`redis://127.0.0.1:${redis.port}/0`, library)
  const a = await startNode(['--redis', url])
  const b = await startNode(['--redis', url])
  nodes.push(a, b)
  expect(a.output()).toMatch(new RegExp(`store: redis redis://127\\.0\\.0\\.1:\\d+/0\\?client=${library}`))
  const onA = await connect(`zaris://127.0.0.1:${a.port}/shared-${library}`, { id: 'on-a' })
  const onB = await connect(`zaris://127.0.0.1:${b.port}/shared-${library}`, { id: 'on-b' })
  const lock = await onA.locks.acquire('lock:one', { ttl: 10_000 })
  expect(lock).not.toBeNull()
  expect(await onB.locks.acquire('lock:one')).toBeNull()
  expect(await onB.locks.holder('lock:one')).toMatchObject({ owner: 'on-a', token: lock!.token })

  // A client of both nodes, talking to a; a dies; it goes on through b, its watch too.
  const both = await connect(`zaris://127.0.0.1:${a.port},127.0.0.1:${b.port}/shared-${library}`, { id: 'both' })
  const watch = both.watch('job:', { prefix: true })
  await watch.ready
  await both.put('job:1', 1)
  expect((await watch.next()).value).toMatchObject({ key: 'job:1', value: 1 })
  await a.kill9()
  await onB.put('job:2', 2)
  const ev: WatchEvent | undefined = (await watch.next()).value
  expect(ev).toMatchObject({ key: 'job:2', value: 2 })
  expect(await both.locks.holder('lock:one')).toMatchObject({ owner: 'on-a' })
  await Promise.all([both.close(), onB.close(), onA.close().catch(() => {})])
}, 120_000)
