/** The Web Locks API cases (cases.ts) against zaris/web-locks over one real etcd member. */
import { afterAll, beforeAll } from 'vitest'
import { EtcdCluster } from '../etcd/server'
import { webLocksCases } from './cases'
import { zarisContexts } from './fixture'

let etcd: EtcdCluster
beforeAll(async () => {
  etcd = await EtcdCluster.start(1)
})
afterAll(async () => {
  await etcd?.dispose()
})

webLocksCases('zaris/web-locks over etcd', zarisContexts(() => etcd.url('web-locks')))
