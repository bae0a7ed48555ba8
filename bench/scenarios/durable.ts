/**
 * Durable locks: a `--data` node (SQLite, WAL, synchronous FULL: a commit is
 * acknowledged once on disk) against a one-member etcd (Debian
 * `etcd-server`, started here on loopback ports in a temp dir; it fsyncs its
 * log before acknowledging). etcd as people use it for locks: a
 * put-if-absent transaction on a key attached to a lease, and a guarded
 * delete; and the `etcd3` client's `lock()` recipe.
 *
 * @module
 */
import { Etcd3 } from 'etcd3'
import { join } from 'node:path'
import { httpAdapter } from 'zaris/http'
import { alternate } from '../lib/compare'
import { etcdLockPeer } from '../lib/handover'
import { contention, oneClient, zarisPeer, type LockPeer } from '../lib/locks'
import { loop } from '../lib/measure'
import type { Scenario } from '../lib/report'
import { ETCD, etcd as startEtcd, node, tempDir, type Etcd } from '../lib/procs'
import type { BenchContext } from './context'
import { CLIENTS, contentionScenario } from './remote'

const TITLE = 'Durable lock: --data node vs etcd'
const OP = 'acquire + release of an uncontended lock, each write acknowledged only once on disk'

export async function durableScenarios(ctx: BenchContext): Promise<Scenario[]> {
  let etcd: Etcd
  try {
    etcd = await startEtcd()
  } catch (err) {
    const why =
      `etcd could not be started (${(err as Error).message.split('\n')[0]}); install Debian's etcd-server ` +
      `(apt-get install etcd-server) or set ZARIS_ETCD to an etcd binary (tried "${ETCD}")`
    ctx.log(`durable: ${why}`)
    return [{ id: 'durable', title: TITLE, op: OP, metric: 'ops', rows: [], skipped: why }]
  }
  const dir = tempDir('zaris-bench-durable-')
  const dataNode = await node(['--data', join(dir.path, 'bench.db')])
  const client = new Etcd3({ hosts: etcd.url })
  let zaris: LockPeer | undefined
  const many: LockPeer[] = []
  const etcds: Etcd3[] = []
  try {
    zaris = zarisPeer(httpAdapter({ endpoints: [dataNode.url], namespace: 'bench' }))
    // One session lease for every raw cycle, as etcd's own concurrency package keeps one per session.
    const lease = client.lease(30, { autoKeepAlive: true })
    lease.on('lost', () => {})
    const leaseId = await lease.grant()
    const dur = ctx.quick ? 250 : 600
    ctx.log('durable: --data node vs etcd')
    const rows = await alternate(
      [
        { label: 'zaris node (--data)', zaris: true, trial: () => oneClient(zaris!, 'lock:durable', dur) },
        {
          label: 'etcd txn (lease, put-if-absent)',
          zaris: false,
          trial: () =>
            loop(async () => {
              const key = 'lock:durable:txn'
              const r = await client.if(key, 'Create', '==', 0).then(client.put(key).value('bench').lease(leaseId)).commit()
              if (!r.succeeded) throw new Error('the etcd lock key was not free')
              const created = r.header.revision
              const d = await client.if(key, 'Create', '==', created).then(client.delete().key(key)).commit()
              if (!d.succeeded) throw new Error('the etcd lock key changed under the bench')
            }, dur),
        },
        {
          label: 'etcd3 lock()',
          zaris: false,
          trial: () =>
            loop(async () => {
              const lock = client.lock('lock:durable:recipe').ttl(30)
              await lock.acquire()
              await lock.release()
            }, dur),
        },
      ],
      ctx.trials,
    )
    await lease.revoke().catch(() => {})
    // Issue 31: 16 clients contending, each waiting as its library lets it (zaris in line; etcd3's lock() on a watch of the key).
    ctx.log(`durable: ${CLIENTS} clients`)
    const zarisMany = Array.from({ length: CLIENTS }, () => zarisPeer(httpAdapter({ endpoints: [dataNode.url], namespace: 'bench' })))
    many.push(...zarisMany)
    const etcdPeers = Array.from({ length: CLIENTS }, () => {
      const c = new Etcd3({ hosts: etcd.url })
      etcds.push(c)
      const peer = etcdLockPeer(c)
      many.push(peer)
      return peer
    })
    const cdur = ctx.quick ? 400 : 800
    const contended = await alternate(
      [
        { label: 'zaris node (--data), wait', zaris: true, trial: (i) => contention(zarisMany, `lock:durable:many:${i}`, cdur) },
        { label: 'etcd3 lock(), waiting on a watch', zaris: false, trial: (i) => contention(etcdPeers, `lock:durable:many:etcd:${i}`, cdur) },
      ],
      ctx.trials,
    )
    const durable16 = contentionScenario('durable-16', `Durable lock, ${CLIENTS} contending clients: --data node vs etcd3 lock()`, contended)
    durable16.op = `one success: ${CLIENTS} clients in one process contend for one lock, each acquiring, releasing at once and going again; latency (p50, p99) is the time from asking to holding; etcd3 lock() waits on a watch of the key and tries again at each delete`
    return [
      durable16,
      {
        id: 'durable',
        title: TITLE,
        op: OP,
        metric: 'ops',
        rows,
        notes: [
          'etcd txn: `If(create_revision == 0) Then(put key with lease)`, released by `If(create_revision == mine) Then(delete)`; one long-lived lease, so two fsynced writes per cycle, as for zaris.',
          'etcd3 lock(): grants a lease, puts the key, and revokes the lease on release (three writes).',
          'etcd and the SQLite file live in the same temporary directory (same disk).',
        ],
      },
    ]
  } finally {
    await zaris?.close()
    await Promise.allSettled(many.map((p) => p.close()))
    for (const c of etcds) c.close()
    client.close()
    await dataNode.stop()
    await etcd.stop()
    dir.remove()
  }
}
