/**
 * The conformance suite, unchanged, against a three-member etcd cluster
 * (etcd's default timing: minimum lease 2 s), each client given every member.
 * In `npm run test:faults`, not `npm test`: its 2 s minimum lease makes it two
 * minutes long, and `npm test` keeps the one-member run (test/etcd) and the
 * three-member fault run (test/faults/etcd-cluster.test.ts).
 */
import { afterAll, beforeAll } from 'vitest'
import { runConformance } from '../conformance'
import { etcdFixture } from '../etcd/fixture'
import { EtcdCluster } from '../etcd/server'

let etcd: EtcdCluster
beforeAll(async () => {
  etcd = await EtcdCluster.start(3)
}, 60_000)
afterAll(async () => {
  await etcd?.dispose()
})

runConformance('etcd, three members', etcdFixture(() => etcd, 'cluster'))
