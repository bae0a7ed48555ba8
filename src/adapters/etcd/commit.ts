/**
 * `commit` on etcd: validation, the leases a commit needs, the transaction
 * (`txn.ts`), and what happens when it cannot be answered at once.
 *
 * - A check failed: the answer, with the entries read in the same transaction.
 * - The request key was there: the commit was applied before (an answer lost
 *   to a dead member, sent again); its answer is read back from etcd's
 *   history at the revision it was applied at.
 * - Only a counter's compare failed: another writer changed it since it was
 *   read; the adapter computes the add again from what the transaction read
 *   and sends it again. So an `add` on etcd takes two round trips at best
 *   (the read, the transaction) and more under contention — etcd has no
 *   increment; on every other store it is one.
 * - A lease expired while the call waited to be sent again: new leases, again.
 * - An `add` over a non-number (or past the safe-integer range) is refused
 *   only if the checks hold: the transaction is then sent writing nothing,
 *   to learn which.
 *
 * @module
 */
import type { Check, CommitResult, Op } from '../../core/contract/adapter'
import { InvalidArgumentError, UnavailableError } from '../../core/contract/errors'
import { checkCommitArgs, checkValue } from '../../core/contract/validate'
import { added as sum } from '../kit/write'
import type { Connection } from './connection'
import { entryOf, type Layout, type RawKv, type Slot } from './layout'
import { buildTxn, failureReads, holds, replayAnswer, replayTxn, successAnswer, type CommitPlan, type CounterState, type PlannedOp } from './txn'

/** etcd's default limit of operations per transaction branch is 128; a delete takes two. */
export const MAX_OPS = 60
export const MAX_CHECKS = 120

/**
 * A commit's arguments, checked as every store checks them (the key rule,
 * shapes, no key in two ops: `checkCommitArgs`), within etcd's limits, and
 * planned: each op with what its transaction needs.
 */
export function planCommit(checks: unknown, ops: unknown): { checks: Check[]; ops: PlannedOp[] } {
  checkCommitArgs(checks, ops)
  const list = ops as Op[]
  if (checks.length > MAX_CHECKS) throw new InvalidArgumentError(`a commit on etcd takes at most ${MAX_CHECKS} checks, got ${checks.length}`)
  if (list.length > MAX_OPS) throw new InvalidArgumentError(`a commit on etcd takes at most ${MAX_OPS} ops, got ${list.length}`)
  const planned = list.map((op, i): PlannedOp => {
    if (op.type !== 'set') return op.type === 'delete' ? { type: 'delete', key: op.key } : { type: 'add', key: op.key, delta: op.delta }
    const p: PlannedOp = { type: 'set', key: op.key, json: JSON.stringify(checkValue(op.value, `ops[${i}].value`)), fresh: op.fresh === true }
    if (op.ttl !== undefined) p.ttl = op.ttl
    if (op.owner !== undefined) p.owner = op.owner
    return p
  })
  return { checks, ops: planned }
}

/**
 * The value an `add` writes over `kv` (absent: a new counter at 0), or the
 * refusal it earns — thrown only if the commit's checks hold, since a failed
 * check is a failed commit, not a refusal.
 */
function added(key: string, kv: RawKv | undefined, delta: number): CounterState {
  const state: CounterState = { json: '' }
  if (kv) {
    state.kv = kv
    state.slot = (kv.key[kv.key.length - 1] === 0x31 ? 1 : 0) as Slot
  }
  try {
    state.json = JSON.stringify(sum(key, kv ? entryOf(key, kv).value : 0, delta))
  } catch (err) {
    state.refusal = err as Error
  }
  return state
}

/** Runs a validated commit to its answer. */
export async function runCommit(connection: Connection, layout: Layout, checks: Check[], ops: PlannedOp[], requestId: string, retention: number): Promise<CommitResult> {
  const counters = new Map<number, CounterState>()
  const adds = ops.flatMap((op, i) => (op.type === 'add' ? [[i, op] as const] : []))
  if (adds.length > 0) {
    const read = await connection.txn('read counters', { compare: [], success: adds.map(([, op]) => ({ request_range: layout.slots(op.key) })), failure: [] })
    adds.forEach(([i, op], n) => counters.set(i, added(op.key, read.responses[n]!.response_range.kvs[0] as unknown as RawKv | undefined, op.delta)))
  }
  // A set whose key the commit checks to be absent needs no slot choice on etcd: the check guarantees it.
  const absent = new Set(checks.flatMap((c) => (('revision' in c ? c.revision : c.created) === null ? [c.key] : [])))
  for (const op of ops) if (op.type === 'set' && absent.has(op.key)) op.absent = true
  const plan: CommitPlan = { checks, ops, counters, requestKey: layout.request(requestId), requestLease: '0' }
  for (let attempt = 0; ; attempt++) {
    // Request keys live between `retention` and twice that: one grant per `retention`, not per SHARE_MS.
    plan.requestLease = await connection.leases.leaseFor(retention, retention)
    for (const op of ops) if (op.type === 'set' && op.ttl !== undefined) op.lease = await connection.leases.leaseFor(op.ttl)
    const refusal = [...counters.values()].find((c) => c.refusal)?.refusal
    plan.dryRun = refusal !== undefined
    let res
    try {
      res = await connection.txn('commit', buildTxn(layout, plan))
    } catch (err) {
      // etcd refuses the whole transaction when a lease it names has expired (a call sent again late).
      if (/lease not found/i.test(String((err as Error)?.message)) && attempt < 5) {
        connection.leases.forget(plan.requestLease)
        for (const op of ops) if (op.type === 'set' && op.lease) connection.leases.forget(op.lease)
        continue
      }
      throw err
    }
    if (res.succeeded && refusal) throw refusal // the checks hold and the counters are as read: nothing was written
    if (res.succeeded) return successAnswer(plan, res, (lease) => connection.leases.left(lease))
    const reads = failureReads(plan, res)
    if (reads.appliedAt !== undefined) return replay(connection, layout, plan, reads.appliedAt)
    const failed = checks.flatMap((check, i) => {
      const kv = reads.checks[i]
      if (holds(check, kv)) return []
      return [{ key: check.key, entry: kv ? entryOf(check.key, kv, connection.leases.left(kv.lease)) : undefined }]
    })
    if (failed.length > 0) return { ok: false, failed }
    // Only a counter moved since it was read: add again to what the transaction saw.
    for (const [i, op] of adds) counters.set(i, added(op.key, reads.counters.get(i), op.delta))
  }
}

async function replay(connection: Connection, layout: Layout, plan: CommitPlan, revision: number): Promise<CommitResult> {
  try {
    const res = await connection.txn('read back a commit applied before', replayTxn(layout, plan, revision))
    return replayAnswer(plan, revision, res)
  } catch (err) {
    throw new UnavailableError(`the commit was applied at revision ${revision}, but its answer was lost and cannot be read back: ${(err as Error).message}`, { cause: err })
  }
}
