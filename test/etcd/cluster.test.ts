/**
 * The conformance suite, unchanged, against a three-member etcd cluster
 * (etcd's default timing: minimum lease 2 s), each client given every member.
 */
import { afterAll, beforeAll } from 'vitest'
import { runConformance } from '../conformance'
import { etcdFixture } from './fixture'
import { EtcdCluster } from './server'

let etcd: EtcdCluster
beforeAll(async () => {
  etcd = await EtcdCluster.start(3)
}, 60_000)
afterAll(async () => {
  await etcd?.dispose()
})

runConformance('etcd, three members', etcdFixture(() => etcd, 'cluster'))
