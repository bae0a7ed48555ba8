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

/** What is wrong with the holds, in words (empty: nothing). */
export function checkHolds(holds: HoldRecord[], store: StoreEvent[], history: HistoryEvent[], now: number, tolerance: number): string[] {
  const problems: string[] = []
  // The successful grants and renewals of each hold, from the recorded commits: [call time, ttl].
  const invokes = new Map<number | string, HistoryEvent>()
  const sent = new Map<string, Array<{ at: number; ttl: number }>>()
  const ownRelease = new Set<number>()
  for (const e of history) {
    if (e.type === 'invoke') {
      invokes.set(e.process, e)
      continue
    }
    const invoke = invokes.get(e.process)
    if (!invoke || e.type !== 'ok' || e.f !== 'commit') continue
    const input = invoke.value as { checks: Array<{ key: string; created?: number | null }>; ops: Array<{ type: string; key: string; owner?: string; ttl?: number }> }
    const out = e.value as { revision: number; entries: EntryJson[] }
    for (const o of input.ops) {
      if (o.type === 'delete' && input.checks.some((c) => c.key === o.key && c.created !== undefined)) ownRelease.add(out.revision)
      if (o.type !== 'set' || o.owner !== invoke.client || o.ttl === undefined) continue
      const written = out.entries.find((w) => w.key === o.key)
      if (!written) continue
      const k = `${invoke.client}\u0000${o.key}\u0000${written.created}`
      let list = sent.get(k)
      if (!list) sent.set(k, (list = []))
      list.push({ at: invoke.time / 1e6, ttl: o.ttl })
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
      const why = end.kind === 'put' ? `the store wrote it at revision ${end.revision} owned by ${end.owner ?? 'nobody'} (created ${end.created})` : `the store ${end.kind === 'expire' ? 'expired' : 'deleted'} it at revision ${end.revision}`
      ends.push({ at: Math.max(end.at, h.grantedAt), reason, why })
    }
    const happened = ends.filter((e) => e.at <= now - tolerance)
    const held = h.lock.held
    if (h.abortedAt === undefined) {
      if (happened.length > 0) problems.push(`${name}: its signal never aborted, though ${happened.map((e) => `${e.why} at ${e.at}`).join('; ')}`)
      continue
    }
    if (held) problems.push(`${name}: held is true after its signal aborted`)
    const before = ends.filter((e) => e.at <= h.abortedAt! + tolerance)
    if (before.length === 0) {
      problems.push(`${name}: its signal aborted at ${h.abortedAt} with ${h.reason}, but nothing had ended it (${ends.map((e) => `${e.why} at ${e.at}`).join('; ') || 'nothing ever did'})`)
    } else if (!before.some((e) => e.reason === h.reason)) {
      problems.push(`${name}: its signal aborted at ${h.abortedAt} with ${h.reason}, but what had ended it says ${before.map((e) => `${e.reason} (${e.why} at ${e.at})`).join(' or ')}`)
    }
  }
  return problems
}
