/**
 * zaris's own promise about holds, which a model of the store cannot see: a
 * hold's signal aborts if and only if its hold ended, and says why. A hold
 * ends at the first of
 * - its holder's deadline: the last renewal (or the grant) it sent that
 *   succeeded, plus the TTL, minus the drift margin (1% + 2 ms): EXPIRED;
 * - `release()` called: RELEASED;
 * - the store ending its life, as the observer's watch saw it: the entry
 *   expired (EXPIRED), deleted by another commit (LOST), written by another
 *   owner or stolen (STOLEN), or written with no owner (LOST) — the new-life
 *   rule: a write that changes the owner ends the life.
 * Once one of these happened the signal must have aborted (after
 * `tolerance` ms for deliveries with real time), with the reason of one that
 * happened by then; while none has, it must not have, and `held` agrees.
 *
 * @module
 */
import type { Lock } from 'zaris'
import type { EntryJson, HistoryEvent } from '../lincheck/history'

export interface HoldRecord {
  lock: Lock
  client: string
  key: string
  token: number
  grantedAt: number
  releaseCalledAt?: number
  abortedAt?: number
  reason?: string
}

export interface StoreEvent {
  key: string
  kind: 'put' | 'delete' | 'expire'
  revision: number
  created?: number
  owner?: string
  at: number
}

const drift = (ttl: number) => ttl * 0.01 + 2

/** A commit the store acknowledged, with what was sent. */
interface AcknowledgedCommit {
  invoke: HistoryEvent
  /** When its answer came (ms). */
  doneAt: number
  checks: Array<{ key: string; revision?: number | null; created?: number | null }>
  ops: Array<{ type: string; key: string; owner?: string; ttl?: number; fresh?: boolean }>
  revision: number
  entries: EntryJson[]
  deleted: string[]
}

/** The acknowledged commits of a recorded history, each with its invocation. */
function acknowledged(history: HistoryEvent[]): AcknowledgedCommit[] {
  const invokes = new Map<number | string, HistoryEvent>()
  const out: AcknowledgedCommit[] = []
  for (const e of history) {
    if (e.type === 'invoke') {
      invokes.set(e.process, e)
      continue
    }
    const invoke = invokes.get(e.process)
    if (!invoke || e.type !== 'ok' || e.f !== 'commit') continue
    const input = invoke.value as Pick<AcknowledgedCommit, 'checks' | 'ops'>
    const result = e.value as Pick<AcknowledgedCommit, 'revision' | 'entries' | 'deleted'>
    out.push({ invoke, doneAt: e.time / 1e6, checks: input.checks, ops: input.ops, revision: result.revision, entries: result.entries ?? [], deleted: result.deleted ?? [] })
  }
  return out
}

/** What a client was told about a hold: a fenced write accepted (at `revision`), a renewal or release that resolved true. */
export interface HoldResult {
  kind: 'fenced' | 'renew' | 'release'
  client: string
  key: string
  token: number
  revision?: number
}

/**
 * The life of `token` at `key` as the store reported it: from the put that
 * started it (revision = created = token) through the puts of the same owner
 * that kept it, to the first event that did not.
 */
export function lifeOf(store: StoreEvent[], key: string, token: number): { start?: StoreEvent; end?: StoreEvent } {
  const events = store.filter((e) => e.key === key)
  const i = events.findIndex((e) => e.kind === 'put' && e.revision === token && e.created === token)
  if (i === -1) return {}
  const start = events[i]!
  const end = events.slice(i + 1).find((e) => e.kind !== 'put' || e.created !== token || e.owner !== start.owner)
  return { start, end }
}

const showChange = (e: StoreEvent) =>
  e.kind === 'put' ? `the store wrote it at revision ${e.revision} owned by ${e.owner ?? 'nobody'} (created ${e.created})` : `the store ${e.kind === 'expire' ? 'expired' : 'deleted'} it at revision ${e.revision}`

const showEnd = (e: StoreEvent) => (e.kind === 'put' ? `written at revision ${e.revision} by ${e.owner ?? 'an ownerless write'} (created ${e.created})` : `${e.kind === 'expire' ? 'expired' : 'deleted'} at revision ${e.revision}`)

/**
 * What the client was told must agree with the token's life: a fenced write
 * accepted inside it, a renewal that resolved true inside it, a release that
 * resolved true the delete that ended it. (A store call the core forgot to
 * guard looks like a plain write to the model of the store; this is where
 * such a bug shows.)
 */
export function checkResults(results: HoldResult[], store: StoreEvent[], history: HistoryEvent[]): string[] {
  const problems: string[] = []
  const deletesBy = new Map<string, Set<number>>()
  for (const c of acknowledged(history)) {
    for (const k of c.deleted) {
      const id = `${c.invoke.client}\u0000${k}`
      if (!deletesBy.has(id)) deletesBy.set(id, new Set())
      deletesBy.get(id)!.add(c.revision)
    }
  }
  for (const r of results) {
    const { start, end } = lifeOf(store, r.key, r.token)
    const name = `${r.client}'s ${r.kind === 'fenced' ? 'fenced write' : r.kind === 'renew' ? 'renewal' : 'release'} of ${r.key} (token ${r.token})`
    if (!start) {
      problems.push(`${name} was accepted, but the store never reported a life with that token`)
      continue
    }
    if (r.kind === 'release') {
      if (!end || end.kind !== 'delete' || !deletesBy.get(`${r.client}\u0000${r.key}`)?.has(end.revision)) {
        problems.push(`${name} resolved true, but the token's life ${end ? `ended ${showEnd(end)}, not by its delete` : 'never ended'}`)
      }
      continue
    }
    if (r.revision === undefined) continue
    if (r.revision < r.token || (end && r.revision >= end.revision)) {
      problems.push(`${name} was accepted at revision ${r.revision}, outside the token's life (${r.token} to ${end ? showEnd(end) : 'now'})`)
    }
  }
  return problems
}

/** What is wrong with the holds, in words (empty: nothing). */
export function checkHolds(holds: HoldRecord[], store: StoreEvent[], history: HistoryEvent[], now: number, tolerance: number): string[] {
  const problems: string[] = []
  // The successful grants and renewals of each hold, from the recorded commits: [call time, ttl].
  const sent = new Map<string, Array<{ at: number; ttl: number; doneAt: number }>>()
  const ownRelease = new Set<number>()
  for (const { invoke, doneAt, checks, ops, revision, entries } of acknowledged(history)) {
    for (const o of ops) {
      if (o.type === 'delete' && checks.some((c) => c.key === o.key && c.created !== undefined)) ownRelease.add(revision)
      if (o.type !== 'set' || o.owner !== invoke.client || o.ttl === undefined) continue
      const written = entries.find((w) => w.key === o.key)
      if (!written) continue
      const k = `${invoke.client}\u0000${o.key}\u0000${written.created}`
      let list = sent.get(k)
      if (!list) sent.set(k, (list = []))
      list.push({ at: invoke.time / 1e6, ttl: o.ttl, doneAt })
    }
  }

  for (const h of holds) {
    const name = `${h.client}'s hold on ${h.key} (token ${h.token})`
    const ends: Array<{ at: number; reason: string; why: string }> = []
    const renewals = sent.get(`${h.client}\u0000${h.key}\u0000${h.token}`) ?? []
    const last = renewals.reduce<{ at: number; ttl: number } | undefined>((a, b) => (!a || b.at >= a.at ? b : a), undefined)
    if (last) ends.push({ at: last.at + last.ttl - drift(last.ttl), reason: 'EXPIRED', why: `its deadline (sent at ${last.at}, TTL ${last.ttl})` })
    if (h.releaseCalledAt !== undefined) ends.push({ at: h.releaseCalledAt, reason: 'RELEASED', why: 'release() called' })
    const end = store.find((e) => e.key === h.key && e.revision > h.token && (e.kind !== 'put' || e.owner !== h.client || e.created !== h.token))
    if (end) {
      const reason =
        end.kind === 'expire' ? 'EXPIRED' : end.kind === 'delete' ? (ownRelease.has(end.revision) ? 'RELEASED' : 'LOST') : end.owner === undefined ? 'LOST' : 'STOLEN'
      ends.push({ at: Math.max(end.at, h.grantedAt), reason, why: showChange(end) })
      // A hold that learns its end from a failed commit or a read (a renewal, a fenced write, a
      // release, the look after a failed watch) names what the key carries then, not the first
      // change (src/core/hold/end.ts). That answer can overtake the watch's event of the first change: on
      // Redis and over HTTP they come on different connections. So every later state counts too,
      // read as a hold reads an entry: another owner's life STOLEN; an ownerless one, or none, LOST
      // (or EXPIRED past its deadline, listed above). The first state of each reason is enough.
      for (const stolen of [true, false]) {
        const later = store.find((e) => e.key === h.key && e.revision > end.revision && (e.kind === 'put' && e.owner !== undefined) === stolen)
        if (later) ends.push({ at: Math.max(later.at, h.grantedAt), reason: stolen ? 'STOLEN' : 'LOST', why: `then ${showChange(later)}` })
      }
    }
    const happened = ends.filter((e) => e.at <= now - tolerance)
    const held = h.lock.held
    if (h.abortedAt === undefined) {
      if (happened.length > 0) problems.push(`${name}: its signal never aborted, though ${happened.map((e) => `${e.why} at ${e.at}`).join('; ')}`)
      continue
    }
    if (held) problems.push(`${name}: held is true after its signal aborted`)
    // The holder knows only the renewals answered by then: a deadline that passed while the next was in
    // flight ends the hold (src/core/hold/hold.ts, renew), though that renewal then succeeded.
    const known = renewals.filter((r) => r.doneAt <= h.abortedAt! + tolerance)
    const knownLast = known.reduce<{ at: number; ttl: number } | undefined>((a, b) => (!a || b.at >= a.at ? b : a), undefined)
    if (knownLast && knownLast !== last) ends.push({ at: knownLast.at + knownLast.ttl - drift(knownLast.ttl), reason: 'EXPIRED', why: `its deadline as known then (sent at ${knownLast.at}, TTL ${knownLast.ttl}; a later renewal still in flight)` })
    const before = ends.filter((e) => e.at <= h.abortedAt! + tolerance)
    if (before.length === 0) {
      problems.push(`${name}: its signal aborted at ${h.abortedAt} with ${h.reason}, but nothing had ended it (${ends.map((e) => `${e.why} at ${e.at}`).join('; ') || 'nothing ever did'})`)
    } else if (!before.some((e) => e.reason === h.reason)) {
      problems.push(`${name}: its signal aborted at ${h.abortedAt} with ${h.reason}, but what had ended it says ${before.map((e) => `${e.reason} (${e.why} at ${e.at})`).join(' or ')}`)
    }
  }
  return problems
}

/**
 * What a hold sends behind the user's back must touch only its own life: a
 * renewal (a set of the key owned by its client, not a grant) extends the
 * life of its token, a release (a delete of the key, not the user's plain
 * delete) ends it. Attributed to the client's latest hold on the key. Never
 * another owner's life, nor an earlier one of its own: that is how a missing
 * token check shows, which the model of the store sees as a plain write.
 */
export function checkHoldCommits(holds: HoldRecord[], store: StoreEvent[], history: HistoryEvent[]): string[] {
  const problems: string[] = []
  for (const { invoke, checks, ops, revision, deleted } of acknowledged(history)) {
    for (const o of ops) {
      const grant = o.type === 'set' && (o.fresh || checks.some((c) => c.key === o.key && c.revision === null))
      const renewal = o.type === 'set' && o.owner === invoke.client && !grant
      const release = o.type === 'delete' && invoke.tag !== 'plain-delete' && holds.some((h) => h.client === invoke.client && h.key === o.key)
      if (!renewal && !release) continue
      // The life a commit checks (`created`) is the one it acts for: a hold's own commits always check it.
      // That life may be a hold the caller never saw: an acquire that gave up while its take waited at the
      // node lets go of the hold the take won after all (src/core/acquire/machine.ts, `park`). A commit that checks
      // no life (how a missing token check shows) is the client's latest hold's on the key.
      const checked = checks.find((c) => c.key === o.key && 'created' in c && typeof c.created === 'number') as { created: number } | undefined
      const token = checked?.created ?? holds.filter((h) => h.client === invoke.client && h.key === o.key && h.token < revision).at(-1)?.token
      if (token === undefined) continue
      const { end } = lifeOf(store, o.key, token)
      const what = `${invoke.client}'s ${renewal ? 'renewal' : 'release'} of ${o.key} at revision ${revision} (${checked ? 'the life it checks' : "its hold's token"} ${token})`
      if (renewal && end && end.revision < revision) problems.push(`${what} wrote after that life had ended (${showEnd(end)}): it took over another life`)
      if (release && end && end.revision < revision && deleted.includes(o.key)) problems.push(`${what} deleted the key after that life had ended (${showEnd(end)}): it ended another life`)
    }
  }
  return problems
}
