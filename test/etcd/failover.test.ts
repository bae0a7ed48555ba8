/**
 * Failover of the etcd adapter on a real three-member cluster: a client
 * given every member goes on when the leader is killed (kill -9) or a member
 * is paused (SIGSTOP), and a commit whose answer was lost (a TCP proxy
 * throws the answer away after etcd applied it) is answered when sent
 * again, not applied twice.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import type { Adapter, Op } from 'zaris'
import { etcdAdapter } from 'zaris/etcd'
import { FaultProxy } from '../faults/proxy'
import { EtcdCluster } from './server'

let etcd: EtcdCluster
const closing: Array<{ close(): Promise<void> } | { stop(): Promise<void> }> = []
beforeAll(async () => {
  etcd = await EtcdCluster.start(3)
}, 60_000)
afterAll(async () => {
  for (const c of closing.reverse()) await ('close' in c ? c.close() : c.stop())
  await etcd?.dispose()
})

const add = (key: string, delta: number) => ({ type: 'add', key, delta }) as unknown as Op

/** Commits in a loop until `stop`; every commit must succeed and revisions must rise. */
async function writer(a: Adapter, stop: () => boolean): Promise<{ commits: number; slowest: number }> {
  let last = 0
  let commits = 0
  let slowest = 0
  while (!stop()) {
    const t = performance.now()
    const r = await a.commit([], [add('n', 1)])
    slowest = Math.max(slowest, performance.now() - t)
    if (!r.ok) throw new Error('commit without checks failed')
    expect(r.revision).toBeGreaterThan(last)
    last = r.revision
    commits++
  }
  return { commits, slowest }
}

test('the leader killed with kill -9, then a member paused: commits go on through the others, each counted once', async () => {
  const a = await etcdAdapter({ url: etcd.url('failover') })
  closing.push(a)
  let stop = false
  const run = writer(a, () => stop)
  await new Promise((r) => setTimeout(r, 500))
  const leader = await etcd.leader()
  await leader.kill()
  await new Promise((r) => setTimeout(r, 2_000))
  await leader.start()
  const other = etcd.members.find((m) => m !== leader)!
  other.pause()
  await new Promise((r) => setTimeout(r, 3_000))
  other.resume()
  await new Promise((r) => setTimeout(r, 500))
  stop = true
  const { commits, slowest } = await run
  expect(commits).toBeGreaterThan(20)
  // An election (about 1 s with etcd's default timing) and a call timeout or two, on a loaded machine.
  expect(slowest).toBeLessThan(10_000)
  expect((await a.get('n'))?.value).toBe(commits)
}, 60_000)

test('a commit whose answer was lost after etcd applied it is answered when sent again, not applied twice', async () => {
  const proxy = await new FaultProxy(etcd.members[0]!.clientPort).start()
  closing.push(proxy)
  const a = await etcdAdapter({ url: `etcd://127.0.0.1:${proxy.port}/lost`, callTimeout: 1_000, timeout: 30_000 })
  const direct = await etcdAdapter({ url: etcd.url('lost') })
  closing.push(a, direct)
  await a.commit([], [{ type: 'set', key: 'warm-up', value: 1 }]) // a lease for request keys, at hand
  proxy.holdReplies()
  const dropped = proxy.dropped
  // No checks: sent again without its request key, it would simply be applied a second time.
  const pending = a.commit([], [{ type: 'set', key: 'v', value: 'x', owner: 'o' }, { type: 'delete', key: 'gone' }])
  // The request reaches etcd and is applied; its answer is thrown away. Then the connection is cut.
  await expect.poll(async () => (await direct.get('v'))?.value, { timeout: 5_000 }).toBe('x')
  const applied = (await direct.get('v'))!.revision
  await expect.poll(() => proxy.dropped, { timeout: 5_000 }).toBeGreaterThan(dropped)
  proxy.heal()
  const answer = await pending
  expect(answer).toEqual({ ok: true, revision: applied, entries: [{ key: 'v', value: 'x', owner: 'o', revision: applied, created: applied }], deleted: [] })
  expect((await direct.get('v'))!.revision).toBe(applied)
}, 60_000)
