/**
 * `zaris serve --etcd URL`: two node processes in front of one real
 * three-member etcd cluster serve one store, so a client given both
 * addresses keeps its lock and its watch when the node it talks to is killed.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { connect, type WatchEvent } from 'zaris'
import { EtcdCluster } from '../etcd/server'
import { startNode, type NodeProcess } from './node-process'

let etcd: EtcdCluster
const nodes: NodeProcess[] = []
beforeAll(async () => {
  etcd = await EtcdCluster.start(3)
}, 60_000)
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.kill9()))
  await etcd?.dispose()
})

test('two nodes on one etcd cluster are one lock domain, and a client fails over between them', async () => {
  const members = `etcd://${etcd.members.map((m) => m.endpoint).join(',')}`
  const a = await startNode(['--etcd', members])
  const b = await startNode(['--etcd', members])
  nodes.push(a, b)
  expect(a.output()).toMatch(/store: etcd etcd:\/\/127\.0\.0\.1:\d+,/)
  const onA = await connect(`zaris://127.0.0.1:${a.port}/shared`, { id: 'on-a' })
  const onB = await connect(`zaris://127.0.0.1:${b.port}/shared`, { id: 'on-b' })
  const lock = await onA.locks.acquire('lock:one', { ttl: 10_000 })
  expect(lock).not.toBeNull()
  expect(await onB.locks.acquire('lock:one')).toBeNull()
  expect(await onB.locks.holder('lock:one')).toMatchObject({ owner: 'on-a', token: lock!.token })

  // A client of both nodes, talking to a; a dies; it goes on through b, its watch and its lock too.
  const both = await connect(`zaris://127.0.0.1:${a.port},127.0.0.1:${b.port}/shared`, { id: 'both' })
  const mine = (await both.locks.acquire('lock:both', { ttl: 5_000 }))!
  const watch = both.watch('job:', { prefix: true })
  await watch.ready
  await both.put('job:1', 1)
  expect((await watch.next()).value).toMatchObject({ key: 'job:1', value: 1 })
  await a.kill9()
  await onB.put('job:2', 2)
  const ev: WatchEvent | undefined = (await watch.next()).value
  expect(ev).toMatchObject({ key: 'job:2', value: 2 })
  expect(await both.locks.holder('lock:one')).toMatchObject({ owner: 'on-a' })
  // Renewed through b past its TTL, and fenced writes go on.
  await new Promise((r) => setTimeout(r, 6_000))
  expect(mine.held).toBe(true)
  await both.put('res', 'v', { fence: mine })
  expect(await mine.release()).toBe(true)
  await Promise.all([both.close(), onB.close(), onA.close().catch(() => {})])
}, 120_000)
