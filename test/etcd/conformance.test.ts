/**
 * The conformance suite, unchanged, against the etcd adapter on one real
 * etcd member (started on free loopback ports for this file; minimum lease
 * 1 s). etcd keeps its revision itself and compacts its history cluster-wide,
 * so the fixture gives no restart, revision or history hooks; an unreachable
 * store is a port nobody listens on, given up on after 1 s.
 */
import { afterAll, beforeAll } from 'vitest'
import { etcdAdapter } from 'zaris/etcd'
import { runConformance } from '../conformance'
import { freePort } from '../server/node-process'
import { etcdFixture } from './fixture'
import { EtcdCluster } from './server'

let etcd: EtcdCluster
beforeAll(async () => {
  etcd = await EtcdCluster.start(1)
})
afterAll(async () => {
  await etcd?.dispose()
})

runConformance(
  'etcd',
  etcdFixture(() => etcd, 'conformance', {
    unreachable: async () => etcdAdapter({ url: `etcd://127.0.0.1:${await freePort()}/nowhere`, callTimeout: 500, timeout: 1_000 }),
  }),
)
