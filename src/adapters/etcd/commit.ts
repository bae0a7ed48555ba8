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
import type { Check, CommitResult, Op } from '../../core/adapter'
import { InvalidArgumentError, UnavailableError } from '../../core/errors'
import { checkKey, checkTtl, checkValue, describe } from '../../core/validate'
import type { Connection } from './connection'
import { entryOf, type Layout, type RawKv, type Slot } from './layout'
import { buildTxn, failureReads, holds, replayAnswer, replayTxn, successAnswer, type CommitPlan, type CounterState, type PlannedOp } from './txn'

/** etcd's default limit of operations per transaction branch is 128; a delete takes two. */
export const MAX_OPS = 60
export const MAX_CHECKS = 120

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** etcd stores bytes: a string with a lone surrogate would come back changed. */
export function checkUnicode(s: string, name: string): string {
  if (LONE_SURROGATE.test(s)) throw new InvalidArgumentError(`${name} contains a lone surrogate, which etcd cannot store unchanged`)
  return s
}

export function validateChecks(checks: unknown): Check[] {
  if (!Array.isArray(checks)) throw new InvalidArgumentError('checks must be an array')
  if (checks.length > MAX_CHECKS) throw new InvalidArgumentError(`a commit on etcd takes at most ${MAX_CHECKS} checks, got ${checks.length}`)
  return checks.map((check: unknown, i) => {
    const name = `checks[${i}]`
    if (typeof check !== 'object' || check === null) throw new InvalidArgumentError(`${name} must be an object with key and revision or created`)
    const c = check as Record<string, unknown>
    checkUnicode(checkKey(c.key, `${name}.key`), `${name}.key`)
    const byRevision = 'revision' in c
    if (byRevision === 'created' in c) throw new InvalidArgumentError(`${name} must have exactly one of revision and created`)
    const want = byRevision ? c.revision : c.created
    if (want !== null && (typeof want !== 'number' || !Number.isSafeInteger(want) || want < 0)) {
      throw new InvalidArgumentError(`${name}.${byRevision ? 'revision' : 'created'} must be an integer >= 0 or null, got ${describe(want)}`)
    }
    return check as Check
  })
}

export function validateOps(ops: unknown): PlannedOp[] {
  if (!Array.isArray(ops)) throw new InvalidArgumentError('ops must be an array')
  if (ops.length > MAX_OPS) throw new InvalidArgumentError(`a commit on etcd takes at most ${MAX_OPS} ops, got ${ops.length}`)
  const seen = new Set<string>()
  return ops.map((raw: unknown, i) => {
    const name = `ops[${i}]`
    if (typeof raw !== 'object' || raw === null) throw new InvalidArgumentError(`${name} must be an object`)
    const op = raw as Op | { type: 'add'; key: string; delta: number }
    const key = checkUnicode(checkKey(op.key, `${name}.key`), `${name}.key`)
    if (seen.has(key)) throw new InvalidArgumentError(`ops: key ${JSON.stringify(key)} appears twice in one commit`)
    seen.add(key)
    if (op.type === 'delete') return { type: 'delete', key }
    if (op.type === 'add') {
      if (typeof op.delta !== 'number' || !Number.isSafeInteger(op.delta)) throw new InvalidArgumentError(`${name}.delta must be a safe integer, got ${describe(op.delta)}`)
      return { type: 'add', key, delta: op.delta }
    }
    if (op.type !== 'set') throw new InvalidArgumentError(`${name}.type must be 'set', 'delete' or 'add', got ${describe((op as { type: unknown }).type)}`)
    const planned: PlannedOp = { type: 'set', key, json: JSON.stringify(checkValue(op.value, `${name}.value`)), fresh: false }
    if (op.ttl !== undefined) planned.ttl = checkTtl(op.ttl, `${name}.ttl`)
    if (op.owner !== undefined) {
      if (typeof op.owner !== 'string') throw new InvalidArgumentError(`${name}.owner must be a string, got ${describe(op.owner)}`)
      planned.owner = checkUnicode(op.owner, `${name}.owner`)
    }
    if (op.fresh !== undefined && typeof op.fresh !== 'boolean') throw new InvalidArgumentError(`${name}.fresh must be a boolean`)
    planned.fresh = op.fresh === true
    return planned
  })
}

/**
 * The value an `add` writes over `kv` (absent: a new counter at 0), or the
 * refusal it earns — thrown only if the commit's checks hold, since a failed
 * check is a failed commit, not a refusal.
 */
function added(key: string, kv: RawKv | undefined, delta: number): CounterState {
  const state: CounterState = { json: '' }
  let current = 0
  if (kv) {
    state.kv = kv
    state.slot = (kv.key[kv.key.length - 1] === 0x31 ? 1 : 0) as Slot
    const value = entryOf(key, kv).value
    if (typeof value !== 'number') {
      state.refusal = new InvalidArgumentError(`add on ${JSON.stringify(key)}: its value is ${describe(value)}, not a number`)
      return state
    }
    current = value
  }
  const next = current + delta
  if (!Number.isSafeInteger(next)) state.refusal = new InvalidArgumentError(`add on ${JSON.stringify(key)}: ${current} + ${delta} is outside the safe-integer range`)
  else state.json = JSON.stringify(next)
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
