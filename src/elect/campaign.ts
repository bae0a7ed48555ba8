/**
 * A campaign of the election-only entry: the same steps as a full client's
 * gated acquire of a term (core/acquire/gated.ts), on the same Web Lock and
 * the same entry, so that both kinds of tab take turns.
 *
 * 1. Ask for the key's gate (the Web Lock a full client's campaign asks
 *    for): the browser's lock manager keeps the line and frees a closed or
 *    crashed tab's gate at once.
 * 2. Granted, take the key in one commit made through the gate: the store
 *    lets a held gate take the key over an entry written through the gate
 *    (its writer let the gate go: resigned, closed, crashed), as a new life,
 *    so the token rises.
 * 3. A holder that is frozen or hung keeps its gate: while waiting, watch
 *    the key. When the holder's entry has passed its TTL (it expired: the
 *    holder's fenced writes fail from then on), or the key stays free with
 *    no entry while someone holds the gate (a grantee that does not take
 *    it), take the key without the gate (the store picks one taker) and
 *    then steal the gate.
 *
 * Granted after reading the key in a state the gated take takes over (free,
 * expired, or written through the gate: its writer let the gate go), the
 * tab leads at the grant (`run.lead`), before the take lands; a take that is
 * then refused, or a gate stolen meanwhile, ends that lead at once.
 *
 * Without `navigator.locks` (an insecure page, an old browser) there is no
 * gate: the campaign waits for the key to be free (deleted, or past its
 * TTL) and takes it in one commit, as a full client without Web Locks does;
 * a closed leader's term then ends at its TTL.
 *
 * @module
 */
import type { Value } from '../core/contract/adapter'
import { UnavailableError } from '../core/contract/errors'
import { WebLockGate } from '../adapters/indexeddb/gate'
import type { ThroughGate } from '../adapters/indexeddb/transactions'
import { expired, type Stored } from '../adapters/kit/write'
import type { TermStore } from './store'
import type { EndCode, Won } from './term'

export type { Won } from './term'

/** How long the key may stay free with no entry while another tab holds its gate, in ms (core/acquire/gated.ts's FREE_GRACE). */
export const FREE_GRACE = 2_000
/** How long after a holder's entry expired a waiter takes the key and steals the gate, in ms (gated.ts's EXPIRED_GRACE). */
export const EXPIRED_GRACE = 100
/** Past a live entry's deadline before looking again, in ms. */
const EXPIRY_GRACE = 5

/** What a campaign needs. */
export interface Run {
  store: TermStore
  name: string
  owner: string
  value: Value
  ttl: number
  signal: AbortSignal
  /** Told when this tab leads on the grant, before its take lands (./early), and when that lead ends without a term. */
  lead?: { begin(): void; lapse(code: EndCode): void }
}

/** Campaigns until this tab leads; rejects with the signal's reason when it aborts. */
export async function win(run: Run): Promise<Won> {
  const { store, name, lead, signal } = run
  const locks = store.locks
  let gate: WebLockGate | undefined
  let lost = false
  let early = false
  const ask = (locks: LockManager) => {
    gate?.release()
    const g = (gate = new WebLockGate(locks, store.namespace, name, {}))
    lost = false
    g.onLost(() => {
      lost = true
      if (early) lead!.lapse('STOLEN')
    })
  }
  // Asked before registering: the gate's `pagehide` listener (it lets the gate go) then runs before the store's (it announces the tab gone).
  if (locks) ask(locks)
  const registered = locks && store.register(run.owner)
  try {
    await registered
    for (;;) {
      // Stolen (a taker without the gate): ask again, behind it.
      if (locks && lost) ask(locks)
      const view = await turn(run, gate)
      const taking = take(run, gate && WebLockGate.through(gate, store.namespace))
      // Granted, and the key is in a state the gated take takes over: lead now, the token follows (./early).
      early = !!lead && gate?.held === true && view !== null && (view === undefined || expired(view, Date.now()) || (view as { gate?: string }).gate !== undefined)
      // Resigned or closed meanwhile: the gate goes at once; the take, landing later, is refused or undone below.
      const letGo = () => early && gate!.release()
      signal.addEventListener('abort', letGo)
      if (early) lead!.begin()
      let won
      try {
        won = await taking
      } finally {
        signal.removeEventListener('abort', letGo)
      }
      if (typeof won === 'object' && signal.aborted) {
        void store.commit([{ key: name, created: won.token }], [{ type: 'delete', key: name }]).catch(() => {})
        throw signal.reason
      }
      if (typeof won === 'object') {
        if (gate && !gate.held) await gate.steal()
        return { ...won, gate }
      }
      if (early) lead!.lapse('LOST')
      early = false
      // Held, yet something the gate cannot take over is there (a plain write): wait for it to go, or for its
      // TTL to pass (nobody may announce that: an expiry is written only by a commit or sweep that meets it).
      if (gate?.held) await changed(run, won + EXPIRY_GRACE)
    }
  } catch (err) {
    gate?.release()
    throw err
  }
}

/**
 * The take: one commit of the term (through the gate, held or not: the entry
 * is marked as the gate's). Refused, the ms the entry in the way has left
 * (Infinity without a TTL).
 */
async function take(run: Run, through: ThroughGate | undefined): Promise<Omit<Won, 'gate'> | number> {
  const sentAt = performance.now()
  const r = await run.store.commit([{ key: run.name, revision: null }], [{ type: 'set', key: run.name, value: run.value, ttl: run.ttl, owner: run.owner }], through)
  return r.ok ? { token: r.entries[0]!.created, revision: r.revision, sentAt } : (r.failed[0]!.entry!.ttl ?? Infinity)
}

/**
 * Resolves when the gate is granted, or when the key may be taken without
 * it (see the module doc); with the entry last read when the grant woke it
 * (unless the page froze meanwhile), else `null`.
 */
async function turn(run: Run, gate: WebLockGate | undefined): Promise<Stored | undefined | null> {
  let sawEnd = false
  const freezes = run.store.freezes
  for (;;) {
    if (gate?.held) return null
    const e = await run.store.read(run.name)
    const now = Date.now()
    const live = e !== undefined && !expired(e, now)
    if (e && !live) sawEnd = true
    // Without a gate, a free key is taken at once.
    if (!live && !gate) return null
    const grace = live ? (e.expiresAt ?? Infinity) - now + EXPIRY_GRACE : sawEnd ? EXPIRED_GRACE : FREE_GRACE
    const woke = await changed(run, grace, gate?.granted)
    // Frozen while it waited: a taker without the gate may have taken the key, and is taking the gate (this page hears of it late).
    if (woke === 'granted') return run.store.freezes === freezes ? e : null
    if (woke === 'denied') throw new UnavailableError(`the browser's lock manager refused the gate of ${JSON.stringify(run.name)}`)
    if (woke === 'end') sawEnd = true
    if (woke !== 'grace') continue
    if (live) {
      sawEnd = true // its TTL passed: look again (it is absent to every read now)
      continue
    }
    return null
  }
}

/**
 * Resolves when the key changes (`event`, or `end` for a delete or expiry;
 * a wake of the page counts as a change), after `ms` (`grace`), or when
 * `granted` settles (`granted` or `denied`); rejects with the signal's reason.
 */
function changed(run: Run, ms = Infinity, granted?: Promise<boolean>): Promise<'event' | 'end' | 'grace' | 'granted' | 'denied'> {
  const { signal, store, name } = run
  return new Promise((resolve, reject) => {
    const timer = Number.isFinite(ms) ? setTimeout(() => done(() => resolve('grace')), Math.max(0, ms)) : undefined
    const onAbort = () => done(() => reject(signal.reason))
    void granted?.then((g) => done(() => resolve(g ? 'granted' : 'denied')))
    const unlisten = store.listen((records) => {
      if (records.length === 0) return done(() => resolve('event'))
      for (const r of records) for (const ev of r.events) if (ev.key === name) return done(() => resolve(ev.type === 'put' ? 'event' : 'end'))
    })
    // Whichever comes first settles it; a later call undoes nothing that is not undone already.
    function done(f: () => void) {
      clearTimeout(timer)
      unlisten()
      signal.removeEventListener('abort', onAbort)
      f()
    }
    if (signal.aborted) return onAbort()
    signal.addEventListener('abort', onAbort)
  })
}
