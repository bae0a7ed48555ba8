/**
 * A watch's lag and reconnects through zaris/otel on etcd (a real etcd),
 * its connection cut by a TCP proxy in front of it (./watch.ts).
 */
import { afterAll, beforeAll, test } from 'vitest'
import { connect } from 'zaris'
import { EtcdCluster } from '../etcd/server'
import { TcpProxy } from '../redis/proxy'
import { watchScenario } from './watch'

let etcd: EtcdCluster
let proxy: TcpProxy
beforeAll(async () => {
  etcd = await EtcdCluster.start(1)
  proxy = await new TcpProxy(etcd.members[0]!.clientPort).start()
}, 60_000)
afterAll(async () => {
  await proxy?.stop()
  await etcd?.dispose()
})

test('watch lag and a reconnect on etcd, its connection cut', async () => {
  const name = `otel-${Math.random().toString(36).slice(2, 8)}`
  await watchScenario((telemetry) => connect(`etcd://127.0.0.1:${proxy.port}/${name}`, { telemetry }), 'etcd', () => proxy.cut())
})
