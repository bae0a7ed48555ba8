/**
 * The conformance suite, unchanged, against a three-member etcd cluster
 * (etcd's default timing), each client given every member.
 */
import { afterAll, beforeAll } from 'vitest'
import { connect, type Adapter, type Client } from 'zaris'
import { etcdAdapter } from 'zaris/etcd'
import { runConformance } from '../conformance'
import { EtcdCluster } from './server'

let etcd: EtcdCluster
beforeAll(async () => {
  etcd = await EtcdCluster.start(3)
}, 60_000)
afterAll(async () => {
  await etcd?.dispose()
})

let n = 0
runConformance('etcd, three members', async () => {
  const url = etcd.url(`cluster-${++n}-${Math.random().toString(36).slice(2, 8)}`)
  const opened: Array<Client | Adapter> = []
  return {
    async connect(options) {
      const client = await connect(url, { ...options })
      opened.push(client)
      return client
    },
    async adapter() {
      const adapter = await etcdAdapter({ url })
      opened.push(adapter)
      return adapter
    },
    async close() {
      await Promise.all(opened.map((c) => c.close()))
    },
  }
})
