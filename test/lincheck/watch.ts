/**
 * What a linearizability search does not see: watches. Watch deliveries
 * are recorded as standalone `info` events (`watch-start`, `watch-event`,
 * `watch-end`, test/lincheck/history.ts) and held to the contract, as etcd's
 * robustness tests validate watch apart from the model:
 *
 * - `order` / `double`: one subscriber gets revisions rising, no event
 *   (a revision and a key: one commit may write several keys) twice.
 * - `skip`: every revision the history knows was written under the prefix
 *   (an acknowledged commit's writes and deletes), after `from` and up to
 *   the last delivered (or the `through` its owner waited for), is delivered.
 * - `mismatch`: an event agrees with the commit of its revision: a put is a
 *   key that commit wrote (same value and `created`), a delete a key it
 *   deleted, and an expiry has a revision of its own (no commit's).
 *
 * A store that lost its state (`store-restart` without `durable`: Redis
 * without persistence, killed) may give a revision out again, to a client
 * that never saw it (DESIGN.md), so with restarts in the history a revision
 * names one commit per store life, not one in all. Each commit's possible lives come from
 * the times alone: at least the restarts that had finished when it was
 * called, at most those that had begun when it returned. An event was
 * written before it was delivered, so its life is at most the restarts that
 * had begun by then. An event is held to the commits at its revision that
 * could share its life, and agrees if one of them wrote it; two of those
 * certainly in one life are reported, since one life has one commit per
 * revision and a match against either would otherwise hide the other. A
 * commit certainly in a later life than a watch's last event is not one the
 * watch skipped (a reused revision cannot come after a higher one). Without
 * restarts every commit is in life 0: each revision has one commit, as before.
 *
 * @module
 */
import { canonical, type EntryJson, type HistoryEvent, type Operation } from './history'

export interface WatchStart {
  watch: string
  prefix: string
  from: number
}
export interface WatchEventValue {
  watch: string
  key: string
  kind: 'put' | 'delete' | 'expire'
  revision: number
  value?: unknown
  created?: number
  owner?: string
}
export interface WatchEnd {
  watch: string
  reason: string
  through?: number
}

export interface WatchViolation {
  kind: 'watch-order' | 'watch-double' | 'watch-skip' | 'watch-mismatch'
  message: string
  events: HistoryEvent[]
}

/** Checks the watches of a history against its acknowledged commits. */
export function checkWatches(standalone: readonly HistoryEvent[], operations: readonly Operation[]): { violations: WatchViolation[]; events: number } {
  const out: WatchViolation[] = []
  const commits = new Map<number, Operation[]>()
  const known: Array<{ revision: number; key: string; op: Operation }> = []
  const lives = storeLives(standalone)
  for (const op of operations) {
    if (op.f !== 'commit' || op.status !== 'ok') continue
    const same = commits.get(op.output.revision)
    if (same) same.push(op)
    else commits.set(op.output.revision, [op])
    for (const e of (op.output.entries ?? []) as EntryJson[]) known.push({ revision: op.output.revision, key: e.key, op })
    for (const k of (op.output.deleted ?? []) as string[]) known.push({ revision: op.output.revision, key: k, op })
  }
  known.sort((a, b) => a.revision - b.revision)

  const watches = new Map<string, { start?: HistoryEvent; events: HistoryEvent[]; end?: HistoryEvent }>()
  const of = (e: HistoryEvent) => {
    const id = `${e.process}/${(e.value as { watch: string }).watch}`
    let w = watches.get(id)
    if (!w) watches.set(id, (w = { events: [] }))
    return w
  }
  let count = 0
  for (const e of standalone) {
    if (e.f === 'watch-start') of(e).start = e
    else if (e.f === 'watch-event') {
      of(e).events.push(e)
      count++
    } else if (e.f === 'watch-end') of(e).end = e
  }

  for (const [id, w] of watches) {
    // One commit may write several keys: an event is a revision and a key.
    const seen = new Map<string, HistoryEvent>()
    const at = (revision: number, key: string) => `${revision}\u0000${key}`
    let last: WatchEventValue | undefined
    let lastAt = 0
    for (const e of w.events) {
      const ev = e.value as WatchEventValue
      const twice = seen.get(at(ev.revision, ev.key))
      if (twice) out.push({ kind: 'watch-double', message: `watch ${id} delivered revision ${ev.revision} (${ev.key}) twice`, events: [twice, e] })
      else if (last && ev.revision < last.revision) out.push({ kind: 'watch-order', message: `watch ${id} delivered revision ${ev.revision} after ${last.revision}`, events: [e] })
      seen.set(at(ev.revision, ev.key), e)
      if (!last || ev.revision > last.revision) {
        last = ev
        lastAt = e.time / 1e6
      }
      const mismatch = matchCommit(ev, e.time / 1e6, commits.get(ev.revision) ?? [], lives)
      if (mismatch) out.push({ kind: 'watch-mismatch', message: `watch ${id}: ${mismatch}`, events: [e] })
    }
    if (!w.start) continue
    const start = w.start.value as WatchStart
    const end = w.end?.value as WatchEnd | undefined
    const upTo = Math.max(last?.revision ?? start.from, end?.reason === 'closed' && end.through !== undefined ? end.through : -Infinity)
    for (const k of known) {
      if (k.revision <= start.from || k.revision > upTo || !k.key.startsWith(start.prefix)) continue
      if (last && lives.earliest(k.op) > lives.latestBy(lastAt)) continue
      if (!seen.has(at(k.revision, k.key))) {
        out.push({ kind: 'watch-skip', message: `watch ${id} (prefix ${JSON.stringify(start.prefix)} from ${start.from}) never delivered revision ${k.revision} (${k.key}), though it delivered up to ${last?.revision ?? 'nothing'}`, events: [w.start, ...k.op.events] })
      }
    }
  }
  return { violations: out, events: count }
}

/** The store lives a history's restarts divide it into, judged by time (ms) alone. */
function storeLives(standalone: readonly HistoryEvent[]) {
  // A durable store's restart (a --data node's) keeps its revisions: one life goes on.
  const restarts = standalone
    .filter((e) => e.f === 'store-restart' && (e.value as { durable?: boolean } | null)?.durable !== true)
    .map((e) => ({ from: ((e.value as { start?: number } | null)?.start ?? e.time) / 1e6, to: e.time / 1e6 }))
  return {
    /** The earliest life a commit can be in: the restarts done before it was called. */
    earliest: (op: Operation) => restarts.filter((r) => r.to < op.call).length,
    /** The latest: the restarts begun before it returned. */
    latest: (op: Operation) => restarts.filter((r) => r.from < op.ret).length,
    /** The latest life of anything written by `ms`. */
    latestBy: (ms: number) => restarts.filter((r) => r.from < ms).length,
  }
}

/** Why an event delivered at `at` (ms) agrees with none of the commits at its revision that could share its life. */
function matchCommit(ev: WatchEventValue, at: number, all: Operation[], lives: ReturnType<typeof storeLives>): string | undefined {
  const candidates = all.filter((c) => lives.earliest(c) <= lives.latestBy(at))
  const certain = candidates.filter((c) => lives.earliest(c) === lives.latest(c))
  for (const [i, a] of certain.entries()) {
    const b = certain.slice(i + 1).find((c) => lives.earliest(c) === lives.earliest(a))
    if (b) return `two acknowledged commits at revision ${ev.revision} in one store life (${a.client ?? a.process}'s and ${b.client ?? b.process}'s)`
  }
  if (candidates.length === 0) return undefined
  const reasons = candidates.map((c) => disagreement(ev, c))
  return reasons.includes(undefined) ? undefined : reasons[reasons.length - 1]
}

function disagreement(ev: WatchEventValue, commit: Operation | undefined): string | undefined {
  if (ev.kind === 'expire') return commit ? `an expiry of ${ev.key} at revision ${ev.revision}, the revision of a commit (${commit.client ?? commit.process}'s): an expiry takes a revision of its own` : undefined
  if (!commit) return undefined
  if (ev.kind === 'delete') return (commit.output.deleted as string[]).includes(ev.key) ? undefined : `a delete of ${ev.key} at revision ${ev.revision}, which that commit did not delete`
  const written = (commit.output.entries as EntryJson[]).find((e) => e.key === ev.key)
  if (!written) return `a put of ${ev.key} at revision ${ev.revision}, which that commit did not write`
  if (ev.value !== undefined && canonical(ev.value) !== canonical(written.value)) return `a put of ${ev.key} at revision ${ev.revision} with value ${canonical(ev.value)}; the commit wrote ${canonical(written.value)}`
  if (ev.created !== undefined && ev.created !== written.created) return `a put of ${ev.key} at revision ${ev.revision} with created ${ev.created}; the commit wrote ${written.created}`
  return undefined
}

/** Records a watch's start, events and end as standalone history events. */
export function watchRecorder(push: (e: HistoryEvent) => void, now: () => number, process: number, watch: string, client?: string) {
  const at = () => Math.round(now() * 1e6)
  return {
    start(prefix: string, from: number) {
      push({ process, type: 'info', f: 'watch-start', value: { watch, prefix, from }, time: at(), client })
    },
    event(ev: { type: 'put' | 'delete' | 'expire'; key: string; revision: number; value?: unknown; created?: number; owner?: string }) {
      const value: WatchEventValue = { watch, key: ev.key, kind: ev.type, revision: ev.revision }
      if (ev.value !== undefined) value.value = ev.value
      if (ev.created !== undefined) value.created = ev.created
      if (ev.owner !== undefined) value.owner = ev.owner
      push({ process, type: 'info', f: 'watch-event', value, time: at(), client })
    },
    end(reason: string, through?: number) {
      push({ process, type: 'info', f: 'watch-end', value: { watch, reason, through }, time: at(), client })
    },
  }
}
