/**
 * The fault suite's judgement of a recorded history, in the manner of Jepsen
 * and etcd's robustness tests: clients record what they did and saw while
 * faults are injected, and the checker decides afterwards whether any of it
 * broke a promise of zaris.
 *
 * Since issue 12 the store operations themselves are recorded at the adapter
 * (test/lincheck/recorder.ts) and checked for linearizability against the
 * store model (test/lincheck), which covers what this file used to look for
 * piecemeal (a stale fenced write, a double grant, tokens and revisions
 * going back, a lost write) and everything else the model knows. What
 * remains here is what no store operation shows, checked on the fault
 * suite's own observations:
 * - `missed-loss`: a holder paused past its TTL (a frozen tab, a `SIGSTOP`ped
 *   process), recorded as a `pause`, whose signal never aborted (no `loss`
 *   record for that token);
 * - `unhandled`: an unhandled rejection or uncaught exception in a client;
 * - and, through test/lincheck/watch.ts, its watchers: `watch-order`,
 *   `watch-double`, `watch-skip` (a revision the history knows was written
 *   under the prefix, never delivered), `watch-mismatch`.
 *
 * The old piecemeal checks (`stale-write`, `double-grant`,
 * `token-regression`, `revision-regression`, `lost-write`) are kept in
 * {@link checkHistory} for stores that do not keep the contract and are
 * only measured (Redis without persistence: how often each happens).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { checkHistory as checkOperations, type CheckOptions as LinOptions } from '../lincheck/check'
import { formatHistory, type HistoryEvent } from '../lincheck/history'
import { verifyHistory } from '../lincheck/verify'

/** Milliseconds on a clock all recording processes share (`performance.timeOrigin + performance.now()`). */
export type Time = number

/** A lock (or lease, or election term) was granted. */
export interface AcquireRecord {
  type: 'acquire'
  client: string
  lock: string
  token: number
  /** When the request was sent. */
  invokedAt: Time
  /** When the grant was received. */
  at: Time
}

/** A write to a resource, fenced by a token or plain. */
export interface WriteRecord {
  type: 'write'
  client: string
  resource: string
  /** The lock it was fenced by, if any. */
  lock?: string
  /** The fencing token it carried, if any. */
  token?: number
  /** accepted: acknowledged by the store; refused: the fence did not hold; unknown: no answer (it may have applied). */
  outcome: 'accepted' | 'refused' | 'unknown'
  /** The store revision of an accepted write. */
  revision?: number
  invokedAt: Time
  at: Time
}

/** The holder learnt that its hold ended without releasing it (its signal aborted). */
export interface LossRecord {
  type: 'loss'
  client: string
  lock: string
  token: number
  /** The HoldEndedError code: EXPIRED, STOLEN, LOST. */
  reason: string
  at: Time
}

/** The holder released its hold. */
export interface ReleaseRecord {
  type: 'release'
  client: string
  lock: string
  token: number
  /** What `release()` resolved: true if it was still held. */
  released: boolean
  /** When `release()` was called: the store may free the lock from here on (a take waiting at a node is granted in the release's own tick, and its answer can reach its client before the release's answer reaches the holder). */
  invokedAt: Time
  /** When `release()` resolved. */
  at: Time
}

/** A watch began: every revision after `from` of a key under `prefix` must reach it. */
export interface WatchStartRecord {
  type: 'watch-start'
  client: string
  watch: string
  prefix: string
  from: number
  at: Time
}

/** One event a watch delivered. */
export interface WatchEventRecord {
  type: 'watch-event'
  client: string
  watch: string
  key: string
  kind: 'put' | 'delete' | 'expire'
  revision: number
  at: Time
}

/**
 * A watch ended. `reason` is `closed` (by its owner), or the error code it
 * ended with (`COMPACTED` is an honest end, never a silent gap). With
 * `through`, the owner waited until the store was past that revision, so
 * every known revision up to it is expected.
 */
export interface WatchEndRecord {
  type: 'watch-end'
  client: string
  watch: string
  reason: string
  through?: number
  at: Time
}

/**
 * A client was paused (a frozen tab, a stopped process) from `at` to `until`
 * while it held `token` of `lock` with `ttl`. When the pause outlasted the
 * TTL, the store let the hold go while the holder could not know: every write
 * it sends after `until` fenced by that token must be refused, and its signal
 * must abort (a `loss` record).
 */
export interface PauseRecord {
  type: 'pause'
  client: string
  lock: string
  token: number
  ttl: number
  at: Time
  until: Time
}

/** An unhandled rejection or uncaught exception in a client. */
export interface UnhandledRecord {
  type: 'unhandled'
  client: string
  error: string
  at: Time
}

/** The state of a resource read after the run (`revision` 0: absent). */
export interface FinalRecord {
  type: 'final'
  resource: string
  revision: number
  token?: number
  at: Time
}

/** Anything else a client wants in the history (ignored by the checks). */
export interface NoteRecord {
  type: 'note'
  client: string
  text: string
  at: Time
  [extra: string]: unknown
}

export type HistoryRecord =
  | AcquireRecord
  | WriteRecord
  | LossRecord
  | ReleaseRecord
  | WatchStartRecord
  | WatchEventRecord
  | WatchEndRecord
  | PauseRecord
  | UnhandledRecord
  | FinalRecord
  | NoteRecord

export type ViolationKind =
  | 'stale-write'
  | 'double-grant'
  | 'token-regression'
  | 'revision-regression'
  | 'watch-reorder'
  | 'watch-double'
  | 'watch-skip'
  | 'lost-write'
  | 'missed-loss'
  | 'unhandled'

export interface Violation {
  kind: ViolationKind
  message: string
  /** The records that show it. */
  records: HistoryRecord[]
}

export interface HistoryStats {
  records: number
  acquisitions: number
  accepted: number
  refused: number
  unknown: number
  losses: number
  releases: number
  watchEvents: number
  /** Holders paused past their TTL whose writes after resuming were checked. */
  pauses: number
  unhandled: number
}

export interface CheckOptions {
  /** Only these checks (default: all). */
  only?: ViolationKind[]
  /**
   * How far apart two processes' clocks may be, in ms, before a real-time
   * order counts: B follows A only if B was invoked more than this after A
   * completed. Default 2 (processes of one machine).
   */
  clockMargin?: number
}

export interface CheckResult {
  ok: boolean
  violations: Violation[]
  stats: HistoryStats
}

/** Checks a history; see the module comment for what fails it. */
export function checkHistory(history: readonly HistoryRecord[], options: CheckOptions = {}): CheckResult {
  const margin = options.clockMargin ?? 2
  const violations: Violation[] = []
  const add = (kind: ViolationKind, message: string, records: HistoryRecord[]) => {
    if (!options.only || options.only.includes(kind)) violations.push({ kind, message, records })
  }
  const of = <T extends HistoryRecord['type']>(type: T) => history.filter((r): r is Extract<HistoryRecord, { type: T }> => r.type === type)

  const acquires = of('acquire')
  const writes = of('write')
  const accepted = writes.filter((w) => w.outcome === 'accepted')

  // Each token names one acquisition.
  const byToken = new Map<number, AcquireRecord>()
  for (const a of acquires) {
    const seen = byToken.get(a.token)
    if (seen) add('double-grant', `token ${a.token} was granted twice: to ${seen.client} (${seen.lock}) and to ${a.client} (${a.lock})`, [seen, a])
    else byToken.set(a.token, a)
  }

  // A client's own acquisitions rise (tokens are store revisions).
  const lastOf = new Map<string, AcquireRecord>()
  for (const a of acquires) {
    const prev = lastOf.get(a.client)
    if (prev && a.token <= prev.token) add('token-regression', `${a.client} got token ${a.token} after token ${prev.token}`, [prev, a])
    lastOf.set(a.client, a)
  }
  // Across clients, in real time: an acquisition invoked after another completed gets a larger token.
  for (const v of realTimeRegressions(acquires, (a) => a.invokedAt, (a) => a.at, (a) => a.token, margin)) {
    add('token-regression', `${v.later.client} got token ${v.later.token} for ${v.later.lock}, invoked after ${v.earlier.client} had already been granted token ${v.earlier.token}`, [v.earlier, v.later])
  }

  // Acknowledged revisions rise in real time too, and are unique.
  const byRevision = new Map<number, WriteRecord>()
  for (const w of accepted) {
    if (w.revision === undefined) continue
    const seen = byRevision.get(w.revision)
    if (seen) add('revision-regression', `revision ${w.revision} was acknowledged twice: to ${seen.client} (${seen.resource}) and ${w.client} (${w.resource})`, [seen, w])
    else byRevision.set(w.revision, w)
    if (w.token !== undefined && w.revision <= w.token) add('revision-regression', `a write fenced by token ${w.token} got the older revision ${w.revision}`, [w])
  }
  const withRevision = accepted.filter((w) => w.revision !== undefined)
  for (const v of realTimeRegressions(withRevision, (w) => w.invokedAt, (w) => w.at, (w) => w.revision!, margin)) {
    add('revision-regression', `${v.later.client}'s write to ${v.later.resource} got revision ${v.later.revision}, sent after revision ${v.earlier.revision} had been acknowledged`, [v.earlier, v.later])
  }

  // Fencing: in store order, the tokens of accepted writes to a resource never fall.
  const perResource = groupBy(accepted, (w) => w.resource)
  for (const [resource, list] of perResource) {
    const fenced = list.filter((w) => w.token !== undefined && w.revision !== undefined).sort((a, b) => a.revision! - b.revision!)
    let max: WriteRecord | undefined
    for (const w of fenced) {
      if (max && w.token! < max.token!) {
        add('stale-write', `${resource}: ${w.client}'s write with token ${w.token} was accepted at revision ${w.revision}, after ${max.client}'s write with token ${max.token} (revision ${max.revision})`, [max, w])
      } else if (max && w.token === max.token && w.client !== max.client) {
        add('stale-write', `${resource}: ${max.client} and ${w.client} both wrote with token ${w.token} (revisions ${max.revision} and ${w.revision}): two holders with one token`, [max, w])
      }
      if (!max || w.token! > max.token!) max = w
    }
  }

  // A successful release deleted the lock entry: nothing fenced by that token may be accepted after it.
  const releasedAt = new Map<string, ReleaseRecord>()
  for (const r of of('release')) if (r.released) releasedAt.set(`${r.client}\u0000${r.lock}\u0000${r.token}`, r)
  for (const w of accepted) {
    if (w.token === undefined || w.lock === undefined) continue
    const r = releasedAt.get(`${w.client}\u0000${w.lock}\u0000${w.token}`)
    if (r && w.invokedAt > r.at) add('stale-write', `${w.client}'s write to ${w.resource} fenced by token ${w.token} was accepted after it had released that lock`, [r, w])
  }

  // No acknowledged write lost: the final state is at least the latest acknowledged write.
  for (const f of of('final')) {
    const list = (perResource.get(f.resource) ?? []).filter((w) => w.revision !== undefined)
    if (list.length === 0) continue
    const latest = list.reduce((a, b) => (b.revision! > a.revision! ? b : a))
    if (f.revision < latest.revision!) {
      add('lost-write', `${f.resource}: the acknowledged write at revision ${latest.revision} by ${latest.client} is gone; the final state is at revision ${f.revision || 'none (absent)'}`, [latest, f])
    } else if (f.revision === latest.revision && latest.token !== undefined && f.token !== undefined && f.token !== latest.token) {
      add('lost-write', `${f.resource}: at revision ${f.revision} the final state carries token ${f.token}, the acknowledged write carried ${latest.token}`, [latest, f])
    }
  }

  // A holder paused past its TTL: nothing it sends after resuming with that hold may be accepted, and it must learn it lost the hold.
  for (const p of of('pause')) {
    if (p.until - p.at <= p.ttl) continue
    for (const w of accepted) {
      if (w.client === p.client && w.lock === p.lock && w.token === p.token && w.invokedAt >= p.until) {
        add('stale-write', `${p.client} was paused ${Math.round(p.until - p.at)} ms holding ${p.lock} (token ${p.token}, TTL ${p.ttl} ms), and a write it sent after resuming, fenced by that hold, was accepted at revision ${w.revision}`, [p, w])
      }
    }
    if (!history.some((r) => r.type === 'loss' && r.client === p.client && r.lock === p.lock && r.token === p.token)) {
      add('missed-loss', `${p.client} was paused ${Math.round(p.until - p.at)} ms holding ${p.lock} (token ${p.token}, TTL ${p.ttl} ms), and its signal never aborted`, [p])
    }
  }

  checkWatches(history, accepted, acquires, add)

  for (const u of of('unhandled')) add('unhandled', `${u.client}: ${u.error}`, [u])

  return {
    ok: violations.length === 0,
    violations,
    stats: {
      records: history.length,
      acquisitions: acquires.length,
      accepted: accepted.length,
      refused: writes.filter((w) => w.outcome === 'refused').length,
      unknown: writes.filter((w) => w.outcome === 'unknown').length,
      losses: of('loss').length,
      releases: of('release').length,
      watchEvents: of('watch-event').length,
      pauses: of('pause').filter((p) => p.until - p.at > p.ttl).length,
      unhandled: of('unhandled').length,
    },
  }
}

function checkWatches(
  history: readonly HistoryRecord[],
  accepted: WriteRecord[],
  acquires: AcquireRecord[],
  add: (kind: ViolationKind, message: string, records: HistoryRecord[]) => void,
): void {
  // Revisions the history knows were written, with the key each wrote.
  const known: Array<{ revision: number; key: string; record: HistoryRecord }> = []
  for (const w of accepted) if (w.revision !== undefined) known.push({ revision: w.revision, key: w.resource, record: w })
  for (const a of acquires) known.push({ revision: a.token, key: a.lock, record: a })
  known.sort((a, b) => a.revision - b.revision)

  const watches = new Map<string, { start?: WatchStartRecord; events: WatchEventRecord[]; end?: WatchEndRecord }>()
  const entry = (id: string) => {
    let w = watches.get(id)
    if (!w) watches.set(id, (w = { events: [] }))
    return w
  }
  for (const r of history) {
    if (r.type === 'watch-start') entry(`${r.client}/${r.watch}`).start = r
    else if (r.type === 'watch-event') entry(`${r.client}/${r.watch}`).events.push(r)
    else if (r.type === 'watch-end') entry(`${r.client}/${r.watch}`).end = r
  }
  for (const [id, w] of watches) {
    const seen = new Map<number, WatchEventRecord>()
    let last: WatchEventRecord | undefined
    for (const ev of w.events) {
      const twice = seen.get(ev.revision)
      if (twice) add('watch-double', `watch ${id} delivered revision ${ev.revision} twice`, [twice, ev])
      else if (last && ev.revision < last.revision) add('watch-reorder', `watch ${id} delivered revision ${ev.revision} after ${last.revision}`, [last, ev])
      seen.set(ev.revision, ev)
      if (!last || ev.revision > last.revision) last = ev
    }
    if (!w.start) continue
    const start = w.start
    const upTo = Math.max(last?.revision ?? start.from, w.end?.reason === 'closed' && w.end.through !== undefined ? w.end.through : -Infinity)
    for (const k of known) {
      if (k.revision <= start.from || k.revision > upTo || !k.key.startsWith(start.prefix)) continue
      if (!seen.has(k.revision)) {
        add('watch-skip', `watch ${id} (prefix ${JSON.stringify(start.prefix)} from ${start.from}) never delivered revision ${k.revision} (${k.key}), though it delivered up to ${last?.revision ?? 'nothing'}`, [start, k.record])
      }
    }
  }
}

/**
 * Pairs (earlier, later) where `later` was invoked more than `margin` after
 * `earlier` completed, yet its value is not larger. Sweeps in invocation
 * order, keeping the largest value among operations completed by then.
 */
function realTimeRegressions<T>(ops: T[], invoked: (op: T) => number, completed: (op: T) => number, value: (op: T) => number, margin: number): Array<{ earlier: T; later: T }> {
  const byCompletion = [...ops].sort((a, b) => completed(a) - completed(b))
  const byInvocation = [...ops].sort((a, b) => invoked(a) - invoked(b))
  const out: Array<{ earlier: T; later: T }> = []
  let i = 0
  let best: T | undefined
  for (const op of byInvocation) {
    while (i < byCompletion.length && completed(byCompletion[i]!) + margin < invoked(op)) {
      const c = byCompletion[i++]!
      if (!best || value(c) > value(best)) best = c
    }
    if (best && best !== op && value(op) <= value(best)) out.push({ earlier: best, later: op })
  }
  return out
}

function groupBy<T>(xs: T[], key: (x: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>()
  for (const x of xs) {
    const k = key(x)
    const list = m.get(k)
    if (list) list.push(x)
    else m.set(k, [x])
  }
  return m
}

/** A readable report of a failed check: each violation with the records that show it. */
export function formatViolations(result: CheckResult, limit = 10): string {
  const lines = [`${result.violations.length} violation(s) in ${result.stats.records} records:`]
  for (const v of result.violations.slice(0, limit)) {
    lines.push(`- ${v.kind}: ${v.message}`)
    for (const r of v.records) lines.push(`    ${JSON.stringify(r)}`)
  }
  if (result.violations.length > limit) lines.push(`... and ${result.violations.length - limit} more`)
  return lines.join('\n')
}

export interface FaultCheckOptions extends LinOptions {
  /** How far apart processes' clocks may be, in ms (default 2). */
  clockMargin?: number
}

/** What a checked fault run did, for figures. */
export interface FaultStats extends HistoryStats {
  /** Store operations checked for linearizability, and how many of unknown outcome. */
  operations: number
  unknownOutcome: number
  checkMs: number
  /** Partitions the search could not decide within its limits, whose writes alone were linearizable (see assertHistory). */
  undecided: number
}

/**
 * Judges a fault run: the store operations for linearizability (and the
 * watchers against them), the observations for what no operation shows
 * (see the module comment). Throws a report with the smallest failing
 * partition when something fails, after writing the whole history in the
 * Jepsen shape to a file whose path the report gives (for `npm run
 * check:history` or a JVM); returns the figures otherwise.
 *
 * A partition the search cannot decide in 60 s or 2 million memo entries
 * (20 tabs stalled by busy loops make operations last longer than the TTL,
 * with dozens in flight at once: the search is exponential in them) is
 * checked on its writes alone, its reads and refused commits left out; it
 * passes if those are linearizable, and is counted in `undecided` (and
 * printed), never passed silently.
 */
export function assertHistory(records: readonly HistoryRecord[], operations: readonly HistoryEvent[], options: FaultCheckOptions = {}): FaultStats {
  const slack = options.slack ?? options.clockMargin ?? 2
  if (operations.length === 0 && records.some((r) => r.type === 'acquire' || r.type === 'write')) {
    throw new Error('the history has acquisitions and writes but no store operations: were the clients recorded (test/lincheck/recorder.ts)?')
  }
  const legacy = checkHistory(records, { clockMargin: options.clockMargin, only: ['missed-loss', 'unhandled'] })
  const watchEvents = records.filter((r) => r.type === 'watch-start' || r.type === 'watch-event' || r.type === 'watch-end').map(asStandalone)
  const verdict = verifyHistory([...operations, ...watchEvents], { maxMs: 60_000, fallback: true, ...options, slack, clockMargin: options.clockMargin ?? slack })
  const lin = verdict.linearizability
  const undecided = lin.partitions.filter((p) => p.verdict === 'unknown')
  const decided = lin.verdict === 'ok' || (lin.verdict === 'unknown' && undecided.every((p) => p.writesOnly?.verdict === 'ok'))
  if (!legacy.ok || !decided || verdict.watch.violations.length > 0) {
    const file = saveHistory([...operations, ...records.map(asStandalone)])
    throw new Error([verdict.ok ? '' : verdict.report, legacy.ok ? '' : formatViolations(legacy), `the history (Jepsen shape): ${file}`].filter(Boolean).join('\n'))
  }
  if (undecided.length > 0) console.log(`[checker] ${verdict.report.split('\n').filter((l) => l.startsWith('undecided')).join('\n[checker] ')}`)
  return { ...legacy.stats, operations: lin.operations, unknownOutcome: lin.unknownOutcome, checkMs: lin.ms, undecided: undecided.length }
}

/** Only the linearizability verdict of a run's operations (for stores that are measured, not held to the contract). */
export const checkRun = (operations: readonly HistoryEvent[], options: FaultCheckOptions = {}) => checkOperations(operations, { slack: 2, ...options })

/** An observation as a standalone Jepsen `info` event. */
export function asStandalone(r: HistoryRecord): HistoryEvent {
  return { process: 'nemesis', type: 'info', f: r.type, value: r, time: Math.round(r.at * 1e6), client: 'client' in r ? r.client : undefined }
}

/** Writes a history to a file in the system's temporary directory (or `ZARIS_HISTORY_DIR`); returns its path. */
export function saveHistory(events: readonly HistoryEvent[]): string {
  const dir = process.env.ZARIS_HISTORY_DIR ?? tmpdir()
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `zaris-history-${Date.now()}-${Math.random().toString(36).slice(2, 8)}.jsonl`)
  writeFileSync(file, formatHistory([...events].sort((a, b) => a.time - b.time)))
  return file
}

/**
 * A clock every process of a machine shares, unaffected by changes to `Date`:
 * in Node the system's monotonic clock (`process.hrtime`, CLOCK_MONOTONIC,
 * the same for every process); in a browser `performance.timeOrigin + now()`.
 * Not `timeOrigin` in Node: it is fixed at process start from two clock
 * readings, and a process starved or stopped between them is off by ms for
 * its whole life (the soak saw a replacement worker 3 ms ahead).
 */
export function sharedNow(): Time {
  const hrtime = (globalThis as { process?: { hrtime?: { bigint?: () => bigint } } }).process?.hrtime
  return hrtime?.bigint ? Number(hrtime.bigint()) / 1e6 : performance.timeOrigin + performance.now()
}

/** A step of the wall clock against the monotonic one this large (ms) voids a run whose store keeps TTLs on the wall clock. */
export const CLOCK_STEP_MS = 200

/**
 * Runs a fault scenario on a store that judges TTLs by its host's wall
 * clock (Redis's `TIME`, Postgres's `clock_timestamp()`), while the history
 * is on the monotonic clock. A step between the two (NTP, a VM resumed:
 * this VM's wall clock steps by seconds to tens of seconds) ends holds early
 * by the history's clock, so a run that fails with such a step proves
 * nothing about the store: it is reported and run once more (`attempt` 1,
 * on fresh names). A failure without a step, or a second one, is thrown,
 * with the step beside it.
 */
export async function againOnClockStep(run: (attempt: number) => Promise<void>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const skew = Date.now() - sharedNow()
    try {
      await run(attempt)
      return
    } catch (err) {
      const step = Math.round(Date.now() - sharedNow() - skew)
      if (Math.abs(step) < CLOCK_STEP_MS) throw err
      if (attempt > 0) throw new Error(`the wall clock stepped ${step} ms against the monotonic one during the run again (the store's TTLs follow it):\n${(err as Error).message}`)
      console.log(`[faults] the wall clock stepped ${step} ms against the monotonic one during the run; its failure is void, running it again:\n${(err as Error).message.slice(0, 2_000)}`)
    }
  }
}
