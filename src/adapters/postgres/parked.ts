/**
 * The Postgres adapter's waiting commits (capability `handover`; the SQL is
 * sql/park.ts): a commit sent with `waitChange` runs `park`, which applies it
 * at once where one of its ways holds and else parks it in the store; the
 * commit or expiry that later lets it through (or answers its failure) does
 * so in its own transaction and sends the answer by NOTIFY.
 *
 * A waiter is registered before its commit is sent, since the answer may come
 * before the reply. Answers are also kept in the store, so one whose
 * notification did not arrive (no LISTEN connection yet, a pooler in
 * transaction mode) is read by a poll: every `pollInterval` ms while
 * notifications are not known to arrive, every second while they are. At its
 * deadline, its caller's abort or the adapter's close a waiter unparks its
 * commit (an answer already given stands) and, at the deadline only, gives it
 * one last try, as any commit.
 *
 * While it waits, a timer at the earliest deadline of the entries its commit
 * failed on expires them (`due_in`, which hands their keys over and answers
 * the next deadline): nothing else may be watching the namespace to do it.
 *
 * @module
 */
import type { Check, CommitOptions, CommitResult, Op } from '../../core/contract/adapter'
import { isZarisError, UnavailableError } from '../../core/contract/errors'
import { checkOrElse, checkValue } from '../../core/contract/validate'
import { sleep, systemClock, type TimerHandle } from '../../core/time/clock'
import { keyBytes, utf8 } from './codec'
import { decode, lineSeen, nextRequestId, runCommit, type Answer, type Target } from './commit'
import type { Listener } from './listener'
import { sqlState } from './load'

/** The longest a commit parks (a longer `waitChange` is cut to it). */
export const MAX_PARK_MS = 30_000
/**
 * How much longer than its wait an adapter waits for a parked commit's answer
 * before it unparks it: past its deadline (Postgres's clock, from when it
 * parked) no change lets it through, so only an answer on its way is waited for.
 */
const UNPARK_SLACK_MS = 20
/** ms between reads of the kept answers while notifications arrive (a safety net). */
const SAFETY_POLL_MS = 1_000
/**
 * Most ms between reads of the kept answers while notifications are not
 * known to arrive (a pooler in transaction mode): each handover waits for
 * one, so it is short; one read serves every waiter of the namespace in
 * the process, and only while someone waits.
 */
const ANSWER_POLL_MS = 5

/** A way (the commit itself or one of its `orElse`) with its values as JSON text. */
interface Way {
  checks: Check[]
  ops: Op[]
  values: Array<string | null>
}

/** A kept answer as a notification or a poll brings it: Postgres's clock (ms) and the answer. */
interface Heard {
  now: number
  kept: unknown
}

/** Each listener's namespaces' waiters (an idle one holds nothing: no hearing, no poll). */
const shared = new WeakMap<Listener, Map<string, ParkAnswers>>()

/**
 * The waiters of a namespace's parked commits in this process (one per
 * listener: the adapters of one pool share it), and how their answers reach them.
 */
export class ParkAnswers {
  readonly #target: Target
  readonly #listener: Listener
  readonly #pollInterval: number
  readonly #waiting = new Map<string, (heard: Heard | undefined) => void>()
  #stopHearing: (() => void) | undefined
  #poll: TimerHandle | undefined

  /** The namespace's waiters on `listener`, shared by the adapters of its pool. */
  static of(target: Target, listener: Listener, pollInterval: number): ParkAnswers {
    let spaces = shared.get(listener)
    if (!spaces) shared.set(listener, (spaces = new Map()))
    let answers = spaces.get(target.namespace)
    if (!answers) spaces.set(target.namespace, (answers = new ParkAnswers(target, listener, Math.min(pollInterval, ANSWER_POLL_MS))))
    return answers
  }

  private constructor(target: Target, listener: Listener, pollInterval: number) {
    this.#target = target
    this.#listener = listener
    this.#pollInterval = pollInterval
  }

  /** Registers a waiter for the answer of parked commit `id`; `cancel` ends the wait with no answer. */
  expect(id: string): { answer: Promise<Heard | undefined>; cancel(): void } {
    let resolve!: (heard: Heard | undefined) => void
    const answer = new Promise<Heard | undefined>((r) => (resolve = r))
    this.#waiting.set(id, resolve)
    this.#stopHearing ??= this.#listener.hearAnswers(this.#target.namespace, (text) => this.#heard(text))
    this.#schedule()
    // Ids are the adapter's own, one per commit: none is waited for twice.
    const done = () => {
      this.#waiting.delete(id)
      if (this.#waiting.size > 0) return
      // Set by the first expect since the last stop: this wait's own.
      this.#stopHearing!()
      this.#stopHearing = undefined
      systemClock.clearTimeout(this.#poll as TimerHandle)
      this.#poll = undefined
    }
    void answer.then(done)
    return { answer, cancel: () => resolve(undefined) }
  }

  /** `<id> <now> [<answer>]`: an answer left out (too long for a notification) is read. */
  #heard(text: string): void {
    const a = text.indexOf(' ')
    const b = text.indexOf(' ', a + 1)
    const id = text.slice(0, a)
    const resolve = this.#waiting.get(id)
    if (!resolve) return
    if (b === -1) return void this.#read()
    resolve({ now: Number(text.slice(a + 1, b)), kept: JSON.parse(text.slice(b + 1)) })
  }

  #schedule(): void {
    if (this.#poll !== undefined) return
    const ms = this.#listener.working ? SAFETY_POLL_MS : this.#pollInterval
    this.#poll = systemClock.setTimeout(() => {
      this.#poll = undefined
      void this.#read().finally(() => {
        if (this.#waiting.size > 0) this.#schedule()
      })
    }, ms)
  }

  /** Reads the kept answers of the commits waited for. */
  async #read(): Promise<void> {
    // Never empty: a poll is cleared when the last wait ends, and a notification reads only for a wait.
    const ids = [...this.#waiting.keys()]
    const { connection, schema, namespace, callTimeout } = this.#target
    try {
      const r = await connection.query<{ id: Buffer; answer: unknown; now: number }>(
        'reading parked answers',
        `SELECT id, answer, extract(epoch FROM clock_timestamp()) * 1000 AS now FROM ${schema}.requests WHERE ns = $1 AND id = ANY ($2::bytea[])`,
        [namespace, ids.map(answerId)],
        callTimeout,
      )
      for (const row of r.rows) this.#waiting.get(row.id.readBigInt64BE(1).toString())?.({ now: Number(row.now), kept: row.answer })
    } catch {
      // The next poll, or the deadline's unpark, reads it.
    }
  }
}

/** The key of a parked commit's answer in `requests` (sql/park.ts). */
function answerId(id: string): Buffer {
  const b = Buffer.alloc(9)
  b[0] = 0xff
  b.writeBigInt64BE(BigInt(id), 1)
  return b
}

/** What a parked commit's wait needs from its adapter. */
export interface ParkContext {
  target: Target
  answers: ParkAnswers
  /** The adapter's open waits: each ends when the adapter closes. */
  waits: Set<() => void>
}

/**
 * A commit sent with `waitChange` (ms, > 0): applied now, or parked in the
 * store until a change lets it through, its failure is answered, or its wait
 * ends (then one last try).
 */
export async function runParked(ctx: ParkContext, checks: Check[], ops: Op[], ms: number, options: CommitOptions, requestId: string | undefined): Promise<CommitResult> {
  checkOrElse(options.orElse)
  const keep = options.keepParked === true
  // checkOrElse checked every other way as a commit: here only each set's value is turned to JSON.
  const ways = [{ checks, ops }, ...(keep ? (options.orElse ?? []) : [])].map((w) => ({
    checks: w.checks,
    ops: w.ops,
    values: w.ops.map((op, j) => (op.type === 'set' ? JSON.stringify(checkValue(op.value, `ops[${j}].value`)) : null)),
  }))
  const json = JSON.stringify(ways.map(wayJson))
  const park = { keep, order: options.parkOrder ?? null, wake: options.wakeOwner === undefined ? null : utf8(options.wakeOwner), ext: requestId === undefined ? null : utf8(requestId) }
  const mine = nextRequestId()
  const waiter = ctx.answers.expect(mine)
  let reply: Answer
  try {
    reply = await callPark(ctx.target, mine, json, Math.min(Math.ceil(ms), MAX_PARK_MS), park)
  } catch (err) {
    waiter.cancel()
    const state = sqlState(err)
    // A fence on a key it would write, or an add Postgres cannot make: a plain commit waits for the fence or says why.
    if (state === 'ZR001' || state === 'ZR002') return runCommit(ctx.target, checks, ops, requestId)
    throw err
  }
  if (reply[0] !== 5) {
    waiter.cancel()
    return answerOf(ctx.target, reply, ways)
  }
  options.onParked?.()
  lineSeen(ctx.target)
  let last = false
  const timer = systemClock.setTimeout(() => {
    last = true
    waiter.cancel()
  }, Math.min(ms, MAX_PARK_MS) + UNPARK_SLACK_MS)
  const expiry = expireAtDeadlines(ctx.target, ways, reply[3])
  const signal = options.signal
  signal?.addEventListener('abort', waiter.cancel, { once: true })
  if (signal?.aborted) waiter.cancel()
  ctx.waits.add(waiter.cancel)
  const heard = await waiter.answer
  systemClock.clearTimeout(timer)
  expiry.stop()
  signal?.removeEventListener('abort', waiter.cancel)
  ctx.waits.delete(waiter.cancel)
  // Others may wait behind it: its next commits skip the lock-shaped statements.
  lineSeen(ctx.target)
  if (heard) return answerOf(ctx.target, [3, heard.now, heard.kept] as Answer, ways)
  // Answered meanwhile (the notification is late or lost), or taken out of park now: what unpark says.
  const after = await call<Answer | null>(ctx.target, 'unparking', `SELECT ${ctx.target.schema}.unpark($1, $2) AS a`, [ctx.target.namespace, mine])
  if (after !== null) return answerOf(ctx.target, after, ways)
  // At the deadline it gets one last try, as any commit; an abort or a close does not apply it.
  if (last) return answerOf(ctx.target, await callPark(ctx.target, nextRequestId(), json, 0, park), ways)
  return answerOf(ctx.target, [1, reply[1], reply[2]] as Answer, ways)
}

/** A way as the `way` composite takes it from JSON (sql/park.ts). */
function wayJson(w: Way): Record<string, unknown> {
  const hex = (b: Buffer) => `\\x${b.toString('hex')}`
  return {
    ck: w.checks.map((c) => hex(keyBytes(c.key))),
    cc: w.checks.map((c) => 'created' in c),
    cw: w.checks.map((c) => ('created' in c ? c.created : c.revision)),
    ot: w.ops.map((o) => o.type[0]).join(''),
    ok: w.ops.map((o) => hex(keyBytes(o.key))),
    ov: w.values,
    ottl: w.ops.map((o) => (o.type === 'set' ? (o.ttl ?? null) : null)),
    oown: w.ops.map((o) => (o.type === 'set' && o.owner !== undefined ? hex(utf8(o.owner)) : null)),
    // Only a set reads it (the SQL): a stray on another op is harmless, and only `true` counts.
    ofresh: w.ops.map((o) => (o as { fresh?: unknown }).fresh === true),
    odelta: w.ops.map((o) => (o.type === 'add' ? o.delta : null)),
  }
}

/** Runs `park`, again with the same id while Postgres cannot answer (the store answers a repeat from what it kept). */
async function callPark(target: Target, mine: string, json: string, ms: number, park: { keep: boolean; order: number | null; wake: Buffer | null; ext: Buffer | null }): Promise<Answer> {
  const { schema, namespace, retention, history } = target
  return call<Answer>(target, 'commit', `SELECT ${schema}.park($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) AS a`, [
    namespace,
    park.ext,
    mine,
    json,
    ms,
    park.keep,
    park.order,
    park.wake,
    retention,
    history,
  ])
}

/** One call, sent again while Postgres cannot answer, for up to `target.timeout` ms. */
async function call<A>(target: Target, what: string, text: string, values: unknown[]): Promise<A> {
  const deadline = systemClock.now() + target.timeout
  for (let attempt = 0; ; attempt++) {
    try {
      return (await target.connection.query<{ a: A }>(what, text, values, target.callTimeout)).rows[0]!.a
    } catch (err) {
      if (!isZarisError(err, 'UNAVAILABLE') || systemClock.now() >= deadline) throw err
      await sleep(systemClock, Math.min(1_000, 25 * 2 ** attempt))
    }
  }
}

/** The commit's answer: of the way that went through (a kept success names it), else judged on its own checks. */
function answerOf(target: Target, answer: Answer, ways: Way[]): CommitResult {
  const kept = answer[0] === 3 ? (answer[2] as unknown[]) : undefined
  const way = kept?.[0] === 0 ? ways[Number(kept[3] ?? 0)] : ways[0]
  if (way === undefined) throw new UnavailableError('Postgres answered a parked commit with a way it was not sent')
  const result = decode(answer, way.checks, way.ops, way.values)
  if (result.ok) {
    if (result.revision > target.known.revision) target.known.revision = result.revision
    target.changed()
  }
  return result
}

/**
 * While a commit waits: a timer at the earliest deadline among the entries
 * at the keys its ways check, which expires them (handing their keys over)
 * and is set again at the next deadline there (a holder renews); `due`,
 * from the park's answer, says when the first is (null: none has one).
 */
function expireAtDeadlines(target: Target, ways: Way[], due: number | null): { stop(): void } {
  const keys = [...new Set(ways.flatMap((w) => w.checks.map((c) => c.key)))].map(keyBytes)
  let timer: TimerHandle | undefined
  let stopped = false
  const at = (ms: number) => {
    if (stopped) return
    timer = systemClock.setTimeout(() => {
      void call<number | null>(target, 'expiry', `SELECT ${target.schema}.due_in($1, $2) AS a`, [target.namespace, keys]).then(
        // Past due and still there: a fence holds it until its transaction ends; look again soon.
        (next) => {
          if (next !== null) at(next > 0 ? next + 1 : 100)
        },
        () => at(100),
      )
    }, ms)
  }
  if (due !== null) at(Math.max(1, due + 1))
  return {
    stop() {
      stopped = true
      systemClock.clearTimeout(timer as TimerHandle)
    },
  }
}
