/**
 * The conformance suite, unchanged, against the etcd adapter on one real
 * etcd member (started on free loopback ports for this file; minimum lease 1 s).
 */
import { afterAll, beforeAll } from 'vitest'
import { runConformance } from '../conformance'
import { etcdFixture } from './fixture'
import { EtcdCluster } from './server'

let etcd: EtcdCluster
beforeAll(async () => {
  etcd = await EtcdCluster.start(1)
})
afterAll(async () => {
  await etcd?.dispose()
})

runConformance('etcd', etcdFixture(() => etcd, 'conformance'))
