/**
 * The `file://` store hands over (capability `handover`): commits that wait
 * in line are rows of the file (`zaris_file_parked`, with the keys each
 * checks in `zaris_file_parked_keys`), judged inside the write transaction
 * of whichever process changes one of their keys.
 *
 * A commit sent with `waitChange` whose first try fails parks as a row (its
 * checks, ops and other ways as JSON; which of its checks held; its
 * `parkOrder`; its deadline on the machine's clock). Every write transaction
 * ends (after its expiries and gone owners, and again after its own commit)
 * with {@link handOver}: the parked commits that check a key it changed are
 * tried in `parkOrder`, then in the order they parked; the first way whose
 * checks all hold is applied with a revision of its own (its request id on
 * its first event), and the keys it changed are looked at in turn, until
 * none goes through. A try that does not go through is answered as
 * `keepParked` says (a check that held on the first try fails; a failed key
 * now owned by its `wakeOwner`), or without it, when a check's outcome
 * turned. An answer is written into the row; the waiting process (waits.ts)
 * reads it when the tail shows a change at one of its keys.
 *
 * Rows past their deadline are never applied (their waiter gives the commit
 * one last try itself, {@link unpark}); rows of an adapter whose registrations
 * end (its process died, or it closed) are dropped; rows whose time is over
 * are pruned {@link KEPT_MS} later, at the next park. No turn is kept
 * between a waiter's two parks (the local store keeps one: see
 * kit/parked.ts): a release that falls in that gap goes to the next in line.
 *
 * @module
 */
import type { Check, CommitResult, Op } from '../../core/contract/adapter'
import { ZarisError } from '../../core/contract/errors'
import type { Failure, Ledger } from './ledger'
import { keyBytes, type ParkedRow } from './schema'

/** How long a row is kept once its deadline passed or it was answered, in ms (its waiter reads the answer well within). */
export const KEPT_MS = 10_000

/**
 * Whether the adapter `nonce` is gone, asked just before a grant to one of
 * its parked commits: a dead process's registrations are ended then (its
 * parked commits dropped, its entries ended), in the same transaction.
 */
export type GoneCheck = (nonce: string) => boolean

/** One way a commit may go through: checks and ops. */
export interface Way {
  checks: Check[]
  ops: Op[]
}

/** A commit that may park, as the waiter sends it. */
export interface ParkRequest extends Way {
  /** Other ways (`orElse`, with `keep` only). */
  orElse: Way[]
  /** `keepParked`. */
  keep: boolean
  wakeOwner?: string
  /** `parkOrder`. */
  order?: number
  requestId?: string
  /** How long it may wait, in ms. */
  ms: number
  /** The adapter that parks it (its registrations' nonce). */
  nonce: string
}

/** A commit that parked: its row, and its first try's failure. */
export interface Parked {
  parked: number
  first: Failure
}

/** What a row's `plan` holds. */
interface Plan extends Way {
  orElse: Way[]
  keep: boolean
  wake?: string
  firstHeld: boolean[]
  request?: string
  /** Every key it checks, its own and its other ways'. */
  keys: string[]
}

/**
 * The first try of a commit that may park, in the transaction of `ledger`:
 * its answer (it went through, one of its other ways did, or it is answered
 * at once), or its row.
 */
export function park(ledger: Ledger, req: ParkRequest): CommitResult | Parked {
  const { sql, ns } = ledger
  prune(ledger)
  // Sent again while its first send waits: the same wait.
  const again = req.requestId === undefined || sql.request.get(ns, req.requestId) ? undefined : sql.parkedRequest.get(ns, req.requestId)
  if (again) return again.answer !== null ? (JSON.parse(again.answer) as CommitResult) : { parked: again.id, first: ledger.judge(req.checks) ?? { ok: false, failed: [] } }
  const r = firstTry(ledger, req)
  if (!('first' in r)) return r
  const held = req.checks.map((c) => ledger.holds(c))
  const keys = [...new Set([...req.checks, ...req.orElse.flatMap((w) => w.checks)].map((c) => c.key))]
  const plan: Plan = { checks: req.checks, ops: req.ops, orElse: req.orElse, keep: req.keep, wake: req.wakeOwner, firstHeld: held, request: req.requestId, keys }
  const row = { ns, ord: req.order ?? null, deadline: ledger.now + req.ms, plan: JSON.stringify(plan), held: JSON.stringify(held), nonce: req.nonce, request: req.requestId ?? null }
  const id = Number(sql.park.run(row).lastInsertRowid)
  for (const key of keys) sql.parkKey.run(ns, keyBytes(key), id)
  return { parked: id, first: r.first }
}

/**
 * A commit's try as a caller's: the answer kept for its request id; it or
 * the first of its other ways that holds, applied; a failure answered at
 * once (a key owned by its `wakeOwner`); else its failure, to park.
 */
function firstTry(ledger: Ledger, req: ParkRequest): CommitResult | { first: Failure } {
  const done = req.requestId === undefined ? undefined : ledger.sql.request.get(ledger.ns, req.requestId)
  if (done) return ledger.answer(done.revision)
  const first = ledger.judge(req.checks)
  if (!first) return ledger.apply(req.ops, req.requestId)
  if (req.wakeOwner !== undefined && first.failed.some((f) => f.entry?.owner === req.wakeOwner)) return first
  const other = req.orElse.find((w) => w.checks.every((c) => ledger.holds(c)))
  return other ? ledger.apply(other.ops, req.requestId) : { first }
}

/**
 * Tries the parked commits that check a key changed in this transaction
 * (see the module doc), until none goes through. Called by the store after
 * the transaction's expiries and gone owners, and after its commit.
 */
export function handOver(ledger: Ledger, gone: GoneCheck): void {
  // Each row due a try, as read after the last change at its keys, with the keys changed since it was tried.
  const due = new Map<number, { row: ParkedRow; keys: Set<string> }>()
  const look = () => {
    for (const key of ledger.changed) {
      for (const row of ledger.sql.parkedAt.all(ledger.ns, keyBytes(key))) {
        if (row.deadline <= ledger.now) continue
        const keys = due.get(row.id)?.keys ?? new Set()
        due.set(row.id, { row, keys: keys.add(key) })
      }
    }
    ledger.changed.clear()
  }
  look()
  while (due.size > 0) {
    let next: { row: ParkedRow; keys: Set<string> } | undefined
    for (const d of due.values()) if (!next || before(d.row, next.row)) next = d
    due.delete(next!.row.id)
    retry(ledger, next!.row, next!.keys, gone)
    look()
  }
}

/**
 * Takes parked commit `id` out of park (its wait ended: deadline, abort,
 * close): its answer if it has one (a grant stands), else, with `last`, the
 * commit's last try (as its first: it or another way goes through, or its
 * failure now); else undefined.
 */
export function unpark(ledger: Ledger, id: number, last: ParkRequest | undefined): CommitResult | undefined {
  const row = ledger.sql.parkedRow.get(id)
  if (row) ledger.dropParked(row.id, (JSON.parse(row.plan) as Plan).keys)
  if (row?.answer) return JSON.parse(row.answer) as CommitResult
  if (!last) return undefined
  const r = firstTry(ledger, last)
  return 'first' in r ? r.first : r
}

/** The answer kept in row `id`: null while it waits, undefined when the row is gone. */
export function answerOf(ledger: Pick<Ledger, 'sql'>, id: number): CommitResult | null | undefined {
  const row = ledger.sql.parkedRow.get(id)
  if (!row) return undefined
  return row.answer === null ? null : (JSON.parse(row.answer) as CommitResult)
}

/**
 * One more try of a parked commit, in the step of a change at `changed`
 * (keys it checks). Its other checks are as last judged (`held`: every
 * change at a key it checks is judged, so they cannot have turned).
 */
function retry(ledger: Ledger, row: ParkedRow, changed: Set<string>, gone: GoneCheck): void {
  const plan = JSON.parse(row.plan) as Plan
  const held = JSON.parse(row.held) as boolean[]
  const outcomes = plan.checks.map((c, i) => (changed.has(c.key) ? ledger.holds(c) : held[i]!))
  const way = outcomes.every(Boolean) ? plan : plan.orElse.find((w) => w.checks.every((c) => ledger.holds(c)))
  if (way) {
    // Never granted to a process that died in line (one that dies after this transaction is as one that died right after its commit).
    if (gone(row.nonce)) return
    let r: CommitResult
    try {
      r = ledger.apply(way.ops, plan.request)
    } catch (err) {
      // Refused by the store's own rules (an add past the safe integers): left parked; its last try tells its caller.
      if (err instanceof ZarisError) return
      throw err
    }
    return settle(ledger, row.id, plan, r)
  }
  const answer = plan.keep
    ? outcomes.some((h, i) => !h && (plan.firstHeld[i] || (plan.wake !== undefined && ledger.entry(plan.checks[i]!.key)?.owner === plan.wake)))
    : outcomes.some((h, i) => h !== held[i])
  if (answer) return settle(ledger, row.id, plan, ledger.judge(plan.checks)!)
  if (outcomes.some((h, i) => h !== held[i])) ledger.sql.setHeld.run(JSON.stringify(outcomes), row.id)
}

/** Answers parked commit `id` with `answer`: kept in its row for its waiter, no longer tried. */
function settle(ledger: Ledger, id: number, plan: Plan, answer: CommitResult): void {
  for (const key of plan.keys) ledger.sql.unparkKey.run(ledger.ns, keyBytes(key), id)
  ledger.sql.answerParked.run(JSON.stringify(answer), ledger.now, id)
}

/** Drops rows whose deadline passed, or that were answered, more than {@link KEPT_MS} ago. */
function prune(ledger: Ledger): void {
  for (const row of ledger.sql.parkedOver.all(ledger.ns, ledger.now - KEPT_MS)) ledger.dropParked(row.id, (JSON.parse(row.plan) as Plan).keys)
}

/** Whether `a` is tried before `b`: a lower `parkOrder` (none: after every one), then parked first. */
function before(a: ParkedRow, b: ParkedRow): boolean {
  const [x, y] = [a.ord ?? Infinity, b.ord ?? Infinity]
  return x !== y ? x < y : a.id < b.id
}
