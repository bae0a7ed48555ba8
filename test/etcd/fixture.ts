/** The conformance suite's store factory on an etcd cluster: a fresh namespace per test. */
import { etcdAdapter } from 'zaris/etcd'
import { adapterFixture, type AdapterFixtureOptions, type FixtureFactory } from '../conformance'
import type { EtcdCluster } from './server'

export function etcdFixture(cluster: () => EtcdCluster, prefix: string, options: AdapterFixtureOptions = {}): FixtureFactory {
  return adapterFixture((namespace) => etcdAdapter({ url: cluster().url(`${prefix}-${namespace}`) }), options)
}
