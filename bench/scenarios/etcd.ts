/**
 * The etcd adapter against etcd as people use it for locks, on one etcd
 * member of the bench's own (fsync on, as shipped), through the same
 * `etcd3` client: its `lock()` recipe, and the raw cycle of a lease grant, a
 * put-if-absent transaction on the leased key and a guarded delete.
 *
 * @module
 */
import { Etcd3 } from 'etcd3'
import { etcdAdapter } from 'zaris/etcd'
import { alternate } from '../lib/compare'
import { oneClient, zarisPeer, type LockPeer } from '../lib/locks'
import { loop } from '../lib/measure'
import type { Scenario } from '../lib/report'
import { ETCD, etcd as startEtcd, type Etcd } from '../lib/procs'
import type { BenchContext } from './context'

const TITLE = 'etcd adapter vs etcd3 lock() and the raw lease + txn cycle'
const OP = 'acquire + release of an uncontended lock (TTL 30 s) on one local etcd member, through etcd3'

export async function etcdScenarios(ctx: BenchContext): Promise<Scenario[]> {
  let etcd: Etcd
  try {
    etcd = await startEtcd()
  } catch (err) {
    const why = `etcd could not be started (${(err as Error).message.split('\n')[0]}); install Debian's etcd-server or set ZARIS_ETCD (tried "${ETCD}")`
    ctx.log(`etcd: ${why}`)
    return [{ id: 'etcd-1', title: TITLE, op: OP, metric: 'ops', rows: [], skipped: why }]
  }
  const client = new Etcd3({ hosts: etcd.url })
  let zaris: LockPeer | undefined
  try {
    zaris = zarisPeer(await etcdAdapter({ url: `etcd://${etcd.url.replace(/^http:\/\//, '')}/bench` }))
    const dur = ctx.quick ? 250 : 600
    ctx.log('etcd: adapter vs lock() vs lease + txn')
    const rows = await alternate(
      [
        { label: 'zaris etcd adapter', zaris: true, trial: () => oneClient(zaris!, 'lock:etcd', dur) },
        {
          label: 'etcd3 lock()',
          zaris: false,
          trial: () =>
            loop(async () => {
              const lock = client.lock('lock:etcd:recipe').ttl(30)
              await lock.acquire()
              await lock.release()
            }, dur),
        },
        {
          label: 'etcd lease grant + txn put-if-absent + guarded delete',
          zaris: false,
          trial: () =>
            loop(async () => {
              const key = 'lock:etcd:raw'
              const { ID } = await client.leaseClient.leaseGrant({ TTL: 30 })
              const r = await client.if(key, 'Create', '==', 0).then(client.put(key).value('bench').lease(ID)).commit()
              if (!r.succeeded) throw new Error('the etcd lock key was not free')
              const d = await client.if(key, 'Create', '==', r.header.revision).then(client.delete().key(key)).commit()
              if (!d.succeeded) throw new Error('the etcd lock key changed under the bench')
            }, dur),
        },
      ],
      ctx.trials,
    )
    return [
      {
        id: 'etcd-1',
        title: TITLE,
        op: OP,
        metric: 'ops',
        rows,
        notes: [
          'zaris: one transaction to acquire (on a lease the adapter shares between writes for up to 0.5 s), one to release; the lease grant is off the path for most acquisitions.',
          'etcd3 lock(): grants a lease (and keeps it alive), puts the key, and revokes the lease on release: three writes.',
          'raw cycle: a lease grant per acquisition, a put-if-absent transaction on the leased key, a guarded delete (three writes; the lease is left to expire, as zaris leaves its leases).',
        ],
      },
    ]
  } finally {
    await zaris?.close()
    client.close()
    await etcd.stop()
  }
}
