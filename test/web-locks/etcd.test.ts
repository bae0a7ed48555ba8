/** The Web Locks API cases (cases.ts) and the checked history (history.ts) against zaris/web-locks over one real etcd member. */
import { afterAll, beforeAll } from 'vitest'
import { EtcdCluster } from '../etcd/server'
import { webLocksCases } from './cases'
import { zarisContexts } from './fixture'
import { historyCases } from './history'

let etcd: EtcdCluster
beforeAll(async () => {
  etcd = await EtcdCluster.start(1)
})
afterAll(async () => {
  await etcd?.dispose()
})

webLocksCases('zaris/web-locks over etcd', zarisContexts(() => etcd.url('web-locks')))
historyCases('etcd', () => etcd.url('web-locks-history'))
