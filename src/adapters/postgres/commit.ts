/**
 * A commit as a call of the schema's commit functions (`sql/commit.ts`):
 * the arguments, the answer, and what happens when an answer is lost.
 *
 * Every commit carries a request id (the caller's, or one made here), so
 * that a commit whose connection broke before its answer came is sent again
 * and answered, not applied twice: the retry locks the namespace (waiting
 * for an attempt still under way) and finds the first attempt's answer if it
 * was applied. A commit that would end or take over a life a fence holds
 * waits for the fence's transaction to end (outside the namespace's lock)
 * and is tried again.
 *
 * @module
 */
import type { Check, CommitResult, Entry, Op, Value } from '../../core/contract/adapter'
import { InternalError, isZarisError, UnavailableError } from '../../core/contract/errors'
import { randomHex } from '../../core/contract/ids'
import { checkValue } from '../../core/contract/validate'
import { sleep, systemClock } from '../../core/time/clock'
import { added } from '../kit/write'
import { hexBytes, keyBytes, parseValue, shownEntry, utf8, type ShownEntry } from './codec'
import type { Connection } from './connection'
import { sqlState } from './load'
import { lockShape, runLockShape } from './lock-path'

/** Where a namespace lives and how its commits are kept. */
export interface Target {
  connection: Connection
  schema: string
  namespace: string
  /** The newest revision of the namespace this adapter knows of (a retry asks whether the log still reaches back to it). */
  known: { revision: number }
  /**
   * Keys whose last check by revision failed here (most recent last, at most
   * {@link CONTENDED}): a commit that checks one of them is first answered
   * from a snapshot, since it likely fails again; any other goes straight to
   * the namespace's lock, one statement less.
   */
  contended: Set<string>
  /**
   * Until when (this process's clock, ms) commits are taken to be parked in
   * the namespace (parked.ts): the lock-shaped statements, which step aside
   * then, are not sent first (a statement that would do nothing).
   */
  lined: { until: number }
  /** Something was written in the namespace: this process's watches read the log now, not at their next poll. */
  changed(): void
  /** How long (ms) a commit's answer is kept for a retry. */
  retention: number
  /** How many recent events the log keeps per namespace. */
  history: number
  /** Most ms one call may take. */
  callTimeout: number
  /** Most ms a commit keeps trying while Postgres cannot answer or a fence holds its key. */
  timeout: number
}

type Failed = Array<[number, ShownEntry | null]>
/** A logged event as a retry's answer shows it: type, key, value, created, owner, deadline. */
type LoggedEvent = [string, string, string | null, number | null, string | null, number | null]
export type Answer =
  | [0, number, number, unknown[]]
  | [1, number, Failed]
  | [3, number, [0, number, unknown[]] | [1, Failed]]
  | [4, number, number, LoggedEvent[]]
  /** Parked (parked.ts), with its first try's failure and the ms until the first deadline at a key its ways check. */
  | [5, number, Failed, number | null]

/**
 * Runs a commit; `requestId` is the caller's, if any. Throws
 * `UnavailableError` when Postgres could not tell within `timeout` whether
 * it was applied.
 */
export async function runCommit(target: Target, checks: Check[], ops: Op[], requestId: string | undefined): Promise<CommitResult> {
  const values = ops.map((op, i) => (op.type === 'set' ? JSON.stringify(checkValue(op.value, `ops[${i}].value`)) : null))
  const ids: Ids = { ext: requestId === undefined ? null : utf8(requestId), mine: nextRequestId(), since: target.known.revision, retry: false }
  const deadline = systemClock.now() + target.timeout
  // A lock's take or release without a caller's id runs as one statement first (lock-path.ts).
  const shape = ids.ext === null ? lockShape(checks, ops) : undefined
  for (let attempt = 0; ; attempt++) {
    // A caller's id may be a retry of an attempt another process still runs: never answer it from a snapshot.
    const snapshot = !ids.retry && ids.ext === null && checks.some((c) => 'revision' in c && target.contended.has(c.key))
    let answer: Answer
    try {
      const lined = target.lined.until > systemClock.now()
      const fast = shape !== undefined && !snapshot && !ids.retry && !lined ? await runLockShape(shape, { ...target, mine: ids.mine }, checks, ops, values[0]!) : undefined
      // It stepped aside for commits parked in the namespace: so will the next ones, for a while.
      if (fast?.done === false && fast.parked) lineSeen(target)
      if (fast?.done) {
        answer = [0, fast.now, fast.revision, [shape === 'take' ? fast.revision : 1]]
        if (fast.prune) pruneSoon(target)
      } else {
        answer = await call(target, checks, ops, values, ids, snapshot)
      }
    } catch (err) {
      const state = sqlState(err)
      if (state === 'ZR002') throw refusedAdd(err, ops)
      if (state === 'ZR003') {
        throw new UnavailableError('a commit whose answer was lost may or may not have been applied: the log no longer reaches back to it, so its retry cannot tell', { cause: err })
      }
      const fenced = state === 'ZR001'
      if (!fenced && !isZarisError(err, 'UNAVAILABLE')) throw err
      if (systemClock.now() >= deadline) throw fenced ? fenceTimeout(target, err) : err
      if (fenced) await waitForFence(target, (err as { cause?: { detail?: string } }).cause?.detail ?? '', deadline)
      else await sleep(systemClock, Math.min(1_000, 25 * 2 ** attempt))
      // A fenced attempt wrote nothing; a broken one may have: the next one must find out.
      if (!fenced) ids.retry = true
      continue
    }
    const result = decode(answer, checks, ops, values)
    if (result.ok && result.revision > target.known.revision) target.known.revision = result.revision
    for (const c of checks) if ('revision' in c) contend(target.contended, c.key, !result.ok)
    if (result.ok) target.changed()
    return result
  }
}

/**
 * The adapter's own request ids: a random 56-bit start per process, then one
 * more per commit (a random draw per commit cost more client CPU than the
 * rest of a lock's take). As unique as a random id per commit: two
 * processes' ids meet only where one's start falls within the other's count
 * while both are in the log, odds of about one in 2^56 per id.
 */
let lastRequestId = BigInt(`0x${randomHex(7)}`)
export function nextRequestId(): string {
  lastRequestId = (lastRequestId + 1n) & 0xff_ffff_ffff_ffffn
  return lastRequestId.toString()
}

/** How long (ms) commits are taken to be parked in a namespace after a sign of it. */
const LINED_MS = 1_000

/** Notes a sign that commits are parked in the namespace (see `Target.lined`). */
export function lineSeen(target: Target): void {
  target.lined.until = systemClock.now() + LINED_MS
}

/** Namespaces whose log a pruning call is under way for. */
const pruning = new WeakSet<Target>()

/**
 * Prunes the namespace's log (the oldest events beyond `history`, request
 * answers past `retention`) in a call of its own, after a lock-shaped commit
 * found it due: off the commit's transaction, one call at a time per
 * namespace and adapter. A failure is left for the next commit that finds
 * it due, so the log keeps at most `history` + max(100, `history` / 10)
 * events plus the commits made while one pruning call runs.
 */
function pruneSoon(target: Target): void {
  if (pruning.has(target)) return
  pruning.add(target)
  const { connection, schema, namespace, history, retention, callTimeout } = target
  connection
    .query('pruning the log', `SELECT ${schema}.prune($1, $2, $3, clock_timestamp()) FROM ${schema}.lock_store($1)`, [namespace, history, retention], callTimeout)
    .catch(() => {})
    .finally(() => pruning.delete(target))
}

/** How many contended keys an adapter remembers. */
export const CONTENDED = 1_024

/** Notes whether a check on `key` failed (oldest forgotten first). */
export function contend(keys: Set<string>, key: string, failed: boolean): void {
  keys.delete(key)
  if (!failed) return
  keys.add(key)
  if (keys.size > CONTENDED) keys.delete(keys.values().next().value!)
}

/** The request ids of a commit: the caller's, the adapter's own, and what a retry needs. */
interface Ids {
  ext: Buffer | null
  mine: string
  /** The namespace's revision the adapter knew before the first attempt. */
  since: number
  retry: boolean
}

function call(target: Target, checks: Check[], ops: Op[], values: Array<string | null>, ids: Ids, snapshot: boolean): Promise<Answer> {
  const { connection, schema, namespace, retention, history, callTimeout } = target
  const head = [namespace, ids.ext, ids.mine, snapshot, ids.retry, ids.since]
  const tail = [retention, history]
  const op = ops[0]!
  if (ops.length === 1 && checks.length <= 1) {
    const c = checks[0]
    const byCreated = c !== undefined && 'created' in c
    const want = c === undefined ? null : byCreated ? c.created : (c as { revision: number | null }).revision
    const args = [...head, c === undefined ? null : keyBytes(c.key), byCreated, want, ...opArgs(op, values[0]!), ...tail]
    return answerOf(connection.query('commit', `SELECT ${schema}.commit1(${params(args.length)}) AS a`, args, callTimeout))
  }
  const args = [
    ...head,
    checks.map((c) => keyBytes(c.key)),
    checks.map((c) => 'created' in c),
    checks.map((c) => ('created' in c ? c.created : c.revision)),
    ops.map((o) => o.type[0]).join(''),
    ops.map((o) => keyBytes(o.key)),
    values,
    ops.map((o) => (o.type === 'set' ? (o.ttl ?? null) : null)),
    ops.map((o) => (o.type === 'set' && o.owner !== undefined ? utf8(o.owner) : null)),
    ops.map((o) => o.type === 'set' && o.fresh === true),
    ops.map((o) => (o.type === 'add' ? o.delta : null)),
    ...tail,
  ]
  return answerOf(connection.query('commit', `SELECT ${schema}.commit(${params(args.length)}) AS a`, args, callTimeout))
}

/** The arguments of one op for `commit1`: type, key, value, ttl, owner, fresh, delta. */
function opArgs(op: Op, value: string | null): unknown[] {
  const set = op.type === 'set' ? op : undefined
  return [
    op.type[0],
    keyBytes(op.key),
    value,
    set?.ttl ?? null,
    set?.owner === undefined ? null : utf8(set.owner),
    set?.fresh === true,
    op.type === 'add' ? op.delta : null,
  ]
}

function params(n: number): string {
  return Array.from({ length: n }, (_, i) => `$${i + 1}`).join(', ')
}

async function answerOf(result: Promise<{ rows: Array<{ a: unknown }> }>): Promise<Answer> {
  return (await result).rows[0]!.a as Answer
}

/** The result an answer stands for. */
export function decode(answer: Answer, checks: Check[], ops: Op[], values: Array<string | null>): CommitResult {
  const now = answer[1]
  let body: [0, number, unknown[]] | [1, Failed]
  if (answer[0] === 3) body = answer[2]
  else if (answer[0] === 4) body = [0, answer[2], partsFrom(answer[3], ops)]
  else if (answer[0] === 0) body = [0, answer[2], answer[3]]
  else body = [1, answer[2]]
  if (body[0] === 1) {
    const failed = body[1].map(([i, shown]) => {
      const key = checks[i - 1]!.key
      return { key, entry: shown === null ? undefined : shownEntry(key, shown, now) }
    })
    return { ok: false, failed }
  }
  const revision = Number(body[1])
  const entries: Entry[] = []
  const deleted: string[] = []
  ops.forEach((op, i) => {
    const part = body[2][i]
    if (op.type === 'delete') {
      if (part === 1) deleted.push(op.key)
    } else if (op.type === 'add') {
      const [created, value, owner, deadline] = part as [number, number, string | null, number | null]
      const entry: Entry = { key: op.key, value: Number(value), revision, created: Number(created) }
      if (owner !== null) entry.owner = hexBytes(owner).toString('utf8')
      if (deadline !== null) entry.ttl = Math.max(0, deadline - now)
      entries.push(entry)
    } else {
      const entry: Entry = { key: op.key, value: JSON.parse(values[i]!) as Value, revision, created: Number(part) }
      if (op.owner !== undefined) entry.owner = op.owner
      if (op.ttl !== undefined) entry.ttl = op.ttl
      entries.push(entry)
    }
  })
  return { ok: true, revision, entries, deleted }
}

/** The parts of a first attempt's answer, from the events it logged (a retry's answer). */
function partsFrom(events: LoggedEvent[] | null, ops: Op[]): unknown[] {
  const byKey = new Map((events ?? []).map((e) => [hexBytes(e[1]).toString('hex'), e]))
  return ops.map((op) => {
    const e = byKey.get(keyBytes(op.key).toString('hex'))
    if (op.type === 'delete') return e?.[0] === 'd' ? 1 : 0
    if (op.type === 'set') return e?.[3]
    return [e?.[3], Number(e?.[2]), e?.[4] ?? null, e?.[5] ?? null]
  })
}

/**
 * Waits until no fence holds the entry at `hex` (its transaction ended):
 * a lock of the row that waits, taken and let go in one statement of its own.
 */
async function waitForFence(target: Target, hex: string, deadline: number): Promise<void> {
  const { connection, schema, namespace } = target
  const left = Math.max(1, Math.min(target.callTimeout, deadline - systemClock.now()))
  try {
    await connection.query(
      'waiting for a fenced transaction',
      `SELECT 1 FROM ${schema}.entries WHERE ns = $1 AND k = $2 FOR UPDATE`,
      [namespace, Buffer.from(hex, 'hex')],
      left,
    )
  } catch (err) {
    if (!(err instanceof UnavailableError)) throw err
  }
}

/** The error of an add Postgres could not make exactly: the key's value (`<op number>:<value>`) and the op's delta tell which. */
function refusedAdd(err: unknown, ops: Op[]): Error {
  const detail = (err as { cause?: { detail?: string } }).cause?.detail ?? ''
  const colon = detail.indexOf(':')
  const op = ops[Number(detail.slice(0, colon)) - 1]
  if (op?.type !== 'add') return err as Error
  added(op.key, parseValue(op.key, detail.slice(colon + 1)), op.delta)
  return new InternalError(`add ${JSON.stringify(op.key)}: Postgres refused ${detail.slice(colon + 1)} + ${op.delta}, which zaris can add`)
}

function fenceTimeout(target: Target, err: unknown): Error {
  return new UnavailableError(
    `the commit waited ${target.timeout} ms for a transaction holding a fence on one of its keys (fence(tx, lock)) to end; end the transaction before releasing or taking over its lock`,
    { cause: err },
  )
}
