/**
 * A zaris commit as one etcd transaction, and its answer read back.
 *
 * ```
 * if   every check holds                 (one compare over the key's two slots each)
 *      and the request key is absent     (not applied before)
 *      and every counter is as read      (for `add`: a compare-and-swap)
 * then every op, and put the request key
 * else read the checked keys, the request key and the counters
 * ```
 *
 * A compare given a `range_end` holds when it holds for every key of the
 * range that exists, or — none existing — for an absent key (create and mod
 * revision 0). Over a key's two slots, of which at most one exists, it so
 * asks about the live entry: `create == 0` is "no live entry",
 * `mod == r` is `{ revision: r }`, `create == c` is `{ created: c }`.
 *
 * A `set` is a nested transaction that picks the slot on etcd itself, since
 * the adapter does not know what the key holds when it commits:
 *
 * ```
 * if the live slot's owner is the op's owner (and not `fresh`):   same life
 *      write the live slot (etcd keeps its create revision)
 * else:                                                           new life
 *      write the slot that is not live, delete the other one
 * ```
 *
 * A `delete` deletes both slots and puts the key's tombstone, so watchers
 * can tell it from an expiry (see `layout.ts`). An `add` writes the slot it
 * read, keeping its lease (`ignore_lease`), guarded by the compare above.
 *
 * @module
 */
import type { ICompare, IRequestOp, IResponseOp, ITxnRequest, ITxnResponse } from 'etcd3'
import type { Check, CommitResult, Entry } from '../../core/contract/adapter'
import { encodeValue, entryOf, ownerRange, type Layout, type RawKv, type Slot } from './layout'

/** A validated op, with what the transaction needs. */
export type PlannedOp =
  | { type: 'set'; key: string; json: string; owner?: string; ttl?: number; fresh: boolean; lease?: string; absent?: boolean }
  | { type: 'delete'; key: string }
  | { type: 'add'; key: string; delta: number }

/** A counter as read before the transaction: its live slot, or nothing. */
export interface CounterState {
  kv?: RawKv
  slot?: Slot
  /** The value the add writes. */
  json: string
  /** The add cannot apply (not a number, out of range): thrown if the commit's checks hold. */
  refusal?: Error
}

export interface CommitPlan {
  /** Write nothing: only learn whether the checks hold (a commit whose add must be refused). */
  dryRun?: boolean
  checks: Check[]
  ops: PlannedOp[]
  /** Per `add` op (by op index): the state it was computed from. */
  counters: Map<number, CounterState>
  requestKey: Buffer
  /** The lease the request key and tombstones live on. */
  requestLease: string
}

const exists = (key: Buffer): ICompare => ({ key, target: 'Create', result: 'Greater', create_revision: 0 })

function checkCompare(layout: Layout, check: Check): ICompare {
  const range = layout.slots(check.key)
  if ('revision' in check) {
    return check.revision === null ? { ...range, target: 'Create', result: 'Equal', create_revision: 0 } : { ...range, target: 'Mod', result: 'Equal', mod_revision: check.revision }
  }
  return { ...range, target: 'Create', result: 'Equal', create_revision: check.created ?? 0 }
}

function setOp(layout: Layout, op: Extract<PlannedOp, { type: 'set' }>): IRequestOp {
  const value = encodeValue(op.json, op.owner, op.ttl)
  const put = (slot: Slot): IRequestOp => ({ request_put: { key: layout.slot(op.key, slot), value, lease: op.lease ?? 0, prev_kv: true } })
  const del = (slot: Slot): IRequestOp => ({ request_delete_range: { key: layout.slot(op.key, slot) } })
  // The commit checks that the key has no live entry: a plain put of slot 0 (an acquisition).
  if (op.absent) return put(0)
  const slot0 = layout.slot(op.key, 0)
  const newLife: IRequestOp = { request_txn: { compare: [exists(slot0)], success: [del(0), put(1)], failure: [del(1), put(0)] } }
  if (op.fresh) return newLife
  const range = layout.slots(op.key)
  const owner = ownerRange(op.owner)
  return {
    request_txn: {
      compare: [
        { ...range, target: 'Value', result: 'Greater', value: owner.above },
        { ...range, target: 'Value', result: 'Less', value: owner.below },
      ],
      success: [{ request_txn: { compare: [exists(slot0)], success: [put(0)], failure: [put(1)] } }],
      failure: [newLife],
    },
  }
}

/** The transaction of a commit. */
export function buildTxn(layout: Layout, plan: CommitPlan): ITxnRequest {
  const compare = plan.checks.map((c) => checkCompare(layout, c))
  compare.push({ key: plan.requestKey, target: 'Create', result: 'Equal', create_revision: 0 })
  const success: IRequestOp[] = []
  plan.ops.forEach((op, i) => {
    if (op.type === 'set') success.push(setOp(layout, op))
    else if (op.type === 'delete') {
      success.push({ request_delete_range: { ...layout.slots(op.key), prev_kv: false } })
      success.push({ request_put: { key: layout.tombstone(op.key), value: Buffer.alloc(0), lease: plan.requestLease } })
    } else {
      const state = plan.counters.get(i)!
      const range = layout.slots(op.key)
      if (state.kv) {
        compare.push({ ...range, target: 'Mod', result: 'Equal', mod_revision: state.kv.mod_revision })
        const stored = encodeValue(state.json, ...ownerAndTtl(state.kv))
        success.push({ request_put: { key: layout.slot(op.key, state.slot!), value: stored, ignore_lease: true, prev_kv: true } })
      } else {
        compare.push({ ...range, target: 'Create', result: 'Equal', create_revision: 0 })
        success.push({ request_put: { key: layout.slot(op.key, 0), value: encodeValue(state.json, undefined, undefined), prev_kv: true } })
      }
    }
  })
  success.push({ request_put: { key: plan.requestKey, value: Buffer.alloc(0), lease: plan.requestLease } })
  if (plan.dryRun) success.length = 0
  const failure: IRequestOp[] = plan.checks.map((c) => ({ request_range: layout.slots(c.key) }))
  failure.push({ request_range: { key: plan.requestKey } })
  plan.ops.forEach((op) => {
    if (op.type === 'add') failure.push({ request_range: layout.slots(op.key) })
  })
  return { compare, success, failure }
}

function ownerAndTtl(kv: RawKv): [string | undefined, number | undefined] {
  const s = kv.value.toString('utf8')
  const a = s.indexOf('\0')
  const b = s.indexOf('\0', a + 1)
  return [a > 0 ? (JSON.parse(s.slice(0, a)) as string) : undefined, b > a + 1 ? Number(s.slice(a + 1, b)) : undefined]
}

/** The put response somewhere in a set's nested transaction, and whether it kept the entry's life. */
function putOfSet(r: IResponseOp, op: Extract<PlannedOp, { type: 'set' }>): { sameLife: boolean; prev?: RawKv } {
  if (op.absent) return { sameLife: false }
  const fresh = op.fresh
  const outer = r.response_txn
  const sameLife = !fresh && outer.succeeded
  const inner = fresh ? outer : outer.responses[0]!.response_txn
  const put = inner.responses[inner.responses.length - 1]!.response_put
  return { sameLife, prev: put.prev_kv as unknown as RawKv | undefined }
}

/** The answer of a transaction that succeeded; `left` says how long a lease is sure to live, if known. */
export function successAnswer(plan: CommitPlan, res: ITxnResponse, left: (lease: string) => number | undefined): CommitResult {
  const revision = Number(res.header.revision)
  const entries: Entry[] = []
  const deleted: string[] = []
  let at = 0
  plan.ops.forEach((op, i) => {
    const r = res.responses[at++]!
    if (op.type === 'delete') {
      at++ // the tombstone
      if (Number(r.response_delete_range.deleted) > 0) deleted.push(op.key)
      return
    }
    if (op.type === 'set') {
      const { sameLife, prev } = putOfSet(r, op)
      const entry: Entry = { key: op.key, value: JSON.parse(op.json), revision, created: sameLife && prev ? Number(prev.create_revision) : revision }
      if (op.owner !== undefined) entry.owner = op.owner
      if (op.ttl !== undefined) entry.ttl = op.ttl
      entries.push(entry)
      return
    }
    const state = plan.counters.get(i)!
    const prev = r.response_put.prev_kv as unknown as RawKv | undefined
    const written: RawKv = {
      key: Buffer.alloc(0),
      value: state.kv ? encodeValue(state.json, ...ownerAndTtl(state.kv)) : encodeValue(state.json, undefined, undefined),
      create_revision: prev ? prev.create_revision : String(revision),
      mod_revision: String(revision),
      lease: prev?.lease ?? '0',
    }
    // An add keeps the entry's lease: its `ttl` is what is left of it.
    entries.push(entryOf(op.key, written, left(String(written.lease))))
  })
  return { ok: true, revision, entries, deleted }
}

/** What a failed transaction read: the checks' live slots, the request key, the counters. */
export interface FailureReads {
  /** The revision the request key was written at, if this commit was applied before. */
  appliedAt?: number
  checks: Array<RawKv | undefined>
  counters: Map<number, RawKv | undefined>
}

export function failureReads(plan: CommitPlan, res: ITxnResponse): FailureReads {
  const kvOf = (r: IResponseOp) => (r.response_range.kvs[0] as unknown as RawKv | undefined)
  const checks = plan.checks.map((_, i) => kvOf(res.responses[i]!))
  const request = kvOf(res.responses[plan.checks.length]!)
  const counters = new Map<number, RawKv | undefined>()
  let at = plan.checks.length + 1
  plan.ops.forEach((op, i) => {
    if (op.type === 'add') counters.set(i, kvOf(res.responses[at++]!))
  })
  const out: FailureReads = { checks, counters }
  if (request) out.appliedAt = Number(request.mod_revision)
  return out
}

/** Whether a check holds against the live slot read in the same transaction. */
export function holds(check: Check, kv: RawKv | undefined): boolean {
  if ('revision' in check) return check.revision === null ? kv === undefined : kv !== undefined && Number(kv.mod_revision) === check.revision
  return check.created === null ? kv === undefined : kv !== undefined && Number(kv.create_revision) === check.created
}

/**
 * The transaction that reads back the answer of a commit applied at
 * `revision` whose answer was lost: each written key as of that revision, and
 * each deleted key as of the revision before.
 */
export function replayTxn(layout: Layout, plan: CommitPlan, revision: number): ITxnRequest {
  return {
    compare: [],
    success: plan.ops.map((op) => ({ request_range: { ...layout.slots(op.key), revision: op.type === 'delete' ? revision - 1 : revision } })),
    failure: [],
  }
}

export function replayAnswer(plan: CommitPlan, revision: number, res: ITxnResponse): CommitResult {
  const entries: Entry[] = []
  const deleted: string[] = []
  plan.ops.forEach((op, i) => {
    const kv = res.responses[i]!.response_range.kvs[0] as unknown as RawKv | undefined
    if (op.type === 'delete') {
      if (kv) deleted.push(op.key)
    } else if (kv) {
      entries.push({ ...entryOf(op.key, kv), ...(op.type === 'set' && op.ttl !== undefined ? { ttl: op.ttl } : {}) })
    }
  })
  return { ok: true, revision, entries, deleted }
}
