/** The conformance suite's store factory on an etcd cluster: a fresh namespace per test. */
import { connect, type Adapter, type Client } from 'zaris'
import { etcdAdapter } from 'zaris/etcd'
import type { FixtureFactory } from '../conformance'
import type { EtcdCluster } from './server'

export function etcdFixture(cluster: () => EtcdCluster, prefix: string): FixtureFactory {
  let n = 0
  return async () => {
    const url = cluster().url(`${prefix}-${++n}-${Math.random().toString(36).slice(2, 8)}`)
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
  }
}
