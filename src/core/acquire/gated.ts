/**
 * An acquire through the store's gate of its key (capability `gates`: under
 * `zaris://idb`, the browser's Web Locks API). The gate orders and excludes
 * the clients before they commit — the wait line in request order, shared
 * and exclusive modes — and a dead client loses its gates at once; the take
 * is still one commit, which the store decides, made through the gate so
 * that it may take the key over the entry of a holder that let the gate go
 * (released, died, or lost it). The hold keeps the gate while it lives.
 *
 * 1. **ask**: a plain try asks only if the gate is free; a steal takes it; a
 *    waiter queues for it, and meanwhile stands in the store's line (so
 *    `locks.query()` shows it) and watches the key.
 * 2. **take**: holding the gate, one commit takes the key (and deletes the
 *    place in line). Something the gate cannot take over in the way — a
 *    plain put, a client without gates, a lock of several keys — is waited
 *    for as without gates (the acquire machine), still holding the gate.
 *
 * A holder that is frozen or hung keeps its gate, and a client that was
 * granted one while frozen holds it without taking the key. So a waiter
 * that sees the key free while it still waits for the gate takes the key in
 * a commit of its own (one waiter wins it: the store decides) and then
 * steals the gate: {@link EXPIRED_GRACE} after the holder's entry expired
 * (its holder is past its TTL, and its fenced writes fail from then on), or
 * {@link FREE_GRACE} after the key was seen free with no entry (a grantee
 * that does not take it). A plain try that finds the gate taken but the key
 * free takes the key without the gate, as zaris's plain tries may go before
 * the line; the gate's holder then waits for it.
 *
 * @module
 */
import type { Entry, Gate, WatchEvent } from '../contract/adapter'
import type { Context } from '../context'
import { UnavailableError } from '../contract/errors'
import { MAX_TTL } from '../contract/limits'
import { keepGate, type Hold, type LockMode } from '../hold/hold'
import type { Checked } from './checks'
import type { Claim } from './claim'
import { WaitQueue } from './line'
import { AcquireMachine } from './machine'

/** How long a waiter lets the key stay free with no entry while another client holds its gate, in ms: a grantee that has not taken it by then is frozen or hung. */
export const FREE_GRACE = 2_000
/** How long after a holder's entry expired a waiter takes the key and steals the gate, in ms (the expiry already said the holder is past its TTL). */
export const EXPIRED_GRACE = 100
/** How long a waiter waits for the gate before it looks at the key, in ms: most gates are granted at once. */
export const LOOK_AFTER = 20
/** Extra ms past a live entry's TTL before looking at the key again, so the store has expired it. */
const EXPIRY_GRACE = 5
/** The longest a platform timer waits (2^31-1 ms; a longer one fires at once): a wait or grace past it, or an infinite one, looks again then. */
const LONGEST_TIMER = MAX_TTL

/** Takes `claim` (one key: a lock in `mode`, a lease, a term) through the gate of `key`; see the module doc. */
export async function acquireGated<H>(ctx: Context, claim: Claim<H>, key: string, mode: LockMode, o: Checked): Promise<H | null> {
  const until = ctx.clock.now() + o.wait
  try {
    for (;;) {
      const r = await throughGate(ctx, claim, key, mode, o, until)
      // The gate was taken from us before our take (granted while this page was frozen, say): ask again.
      if (r !== LOST) return r
    }
  } finally {
    claim.leave()
  }
}

/** What {@link throughGate} answers when the gate was taken from us before the take: ask for it again. */
const LOST: unique symbol = Symbol('lost')

/** One request for the gate, until the hold, the end of the wait, or the gate lost before the take. */
async function throughGate<H>(ctx: Context, claim: Claim<H>, key: string, mode: LockMode, o: Checked, until: number): Promise<H | null | typeof LOST> {
  const plain = o.wait <= 0 && !o.steal
  const gate = ctx.adapter.gate!(key, { mode, ifAvailable: plain, steal: o.steal })
  claim.through = gate
  let line: WaitQueue | undefined
  try {
    let got: boolean | { hold: H; place: Entry | undefined } = plain || o.steal ? await gate.granted : await raceGrant(ctx, gate, LOOK_AFTER)
    if (got === false && !plain) {
      // A lock's or lease's line is its key's.
      line = WaitQueue.for(ctx, key, claim.lineValue)
      got = await wait(ctx, claim, gate, key, until, o, line)
    }
    if (got === false) {
      gate.release()
      line?.leave()
      return plain && !o.inLine ? await barge(claim) : null
    }
    if (got !== true) return kept(got.hold, gate, line, got.place)
    // Held: the take, in one commit with the place in line.
    const place = line?.entry
    const r = await claim.attempt(undefined, { place, first: true })
    if ('hold' in r) return kept(r.hold, gate, line, place)
    line?.leave()
    line = undefined
    if (!gate.held && ctx.clock.now() < until) {
      gate.release()
      return LOST
    }
    // Something the gate cannot take over is in the way: wait for it as without gates, holding the gate.
    const hold = await new AcquireMachine(ctx, claim, { wait: Math.max(0, until - ctx.clock.now()), signal: o.signal, steal: o.steal, inLine: undefined }).run()
    if (hold) return kept(hold, gate, undefined, undefined)
    gate.release()
    return null
  } catch (err) {
    gate.release()
    line?.leave()
    throw err
  }
}

/**
 * The hold, which keeps the gate from now on (a gate taken from us meanwhile
 * is let go: the hold then lives as one taken without a gate); the place in
 * line went with the take when it was in it (`place`), else it is left now.
 */
function kept<H>(hold: H, gate: Gate, line: WaitQueue | undefined, place: Entry | undefined): H {
  if (place) line!.taken()
  else line?.leave()
  if (gate.held) keepGate(hold as Hold, gate)
  else gate.release()
  return hold
}

/** A plain try while another client holds the gate: the key itself, if the store has it free (without the gate). */
async function barge<H>(claim: Claim<H>): Promise<H | null> {
  for (let round = 0; round < 3; round++) {
    const r = await claim.attempt(undefined, { ungated: true })
    if ('hold' in r) return r.hold
    if (r.sight) return null
  }
  return null
}

/** Whether the gate is granted within `ms` (false: not yet). */
async function raceGrant(ctx: Context, gate: Gate, ms: number): Promise<boolean> {
  let timer: ReturnType<Context['clock']['setTimeout']> | undefined
  const later = new Promise<false>((resolve) => (timer = ctx.clock.setTimeout(() => resolve(false), ms)))
  try {
    return await Promise.race([gate.granted, later])
  } finally {
    ctx.clock.clearTimeout(timer!)
  }
}

/**
 * Waits for the gate in line, watching the key: true once granted, false
 * when the wait ran out, or the hold of a takeover (see the module doc) and
 * the place in line its commit deleted.
 * Rejects with the caller's signal's reason, or `ClosedError` on close.
 */
async function wait<H>(ctx: Context, claim: Claim<H>, gate: Gate, key: string, until: number, o: Checked, line: WaitQueue | undefined): Promise<boolean | { hold: H; place: Entry | undefined }> {
  // A place in the store's line, for `locks.query()`; the gate keeps the order.
  const tending = new AbortController()
  if (line) void tend(ctx, line, tending.signal, o.inLine?.onQueued)
  else o.inLine?.onQueued?.()
  /** The key changed since the last look; `expired`: its entry ended by its TTL (or a look found it past it). */
  let dirty = false
  let expired = false
  let wake = () => {}
  const unwatch = await ctx.adapter.watch(key, {
    event: (ev: WatchEvent) => {
      expired = ev.type === 'expire'
      dirty = true
      wake()
    },
    error: () => {
      dirty = true
      wake()
    },
  })
  try {
    for (;;) {
      dirty = false
      const entry = await ctx.adapter.get(key)
      const left = until - ctx.clock.now()
      if (left <= 0) return false
      if (dirty) continue
      // Free with nobody in it: a grantee takes it within milliseconds, unless it is frozen or hung.
      const grace = entry ? (entry.ttl ?? Infinity) + EXPIRY_GRACE : expired ? EXPIRED_GRACE : FREE_GRACE
      const woke = await new Promise<'granted' | 'event' | 'grace' | 'deadline'>((resolve, reject) => {
        const off: Array<() => void> = []
        const settle = (f: () => void) => {
          for (const u of off) u()
          f()
        }
        wake = () => settle(() => resolve('event'))
        off.push(() => (wake = () => {}))
        const after = (ms: number, woke: 'deadline' | 'grace') => {
          const timer = ctx.clock.setTimeout(() => settle(() => resolve(ms > LONGEST_TIMER ? 'event' : woke)), Math.min(ms, LONGEST_TIMER))
          off.push(() => ctx.clock.clearTimeout(timer))
        }
        after(left, 'deadline')
        after(grace, 'grace')
        off.push(ctx.onClose((reason) => settle(() => reject(reason))))
        void gate.granted.then((g) =>
          settle(() => (g ? resolve('granted') : reject(new UnavailableError(`the browser's lock manager refused the gate of ${JSON.stringify(key)}`)))),
        )
        const signal = o.signal
        if (signal) {
          const onAbort = () => settle(() => reject(signal.reason))
          if (signal.aborted) return onAbort()
          signal.addEventListener('abort', onAbort)
          off.push(() => signal.removeEventListener('abort', onAbort))
        }
      })
      if (woke === 'granted') return true
      if (woke === 'deadline') return false
      if (woke !== 'grace') continue
      // The entry's TTL passed: it is gone, or about to be (look again).
      if (entry !== undefined) {
        expired = true
        continue
      }
      // Its holder is past its TTL, or a grantee does not take it: take the key (the store picks one waiter), then the gate.
      const place = line?.entry
      const r = await claim.attempt(undefined, { place, first: true })
      if ('hold' in r) {
        await gate.steal()
        return { hold: r.hold, place }
      }
      if (r.lostPlace) line!.lost()
    }
  } finally {
    tending.abort()
    unwatch()
  }
}

/**
 * Writes our place in the store's line (then tells `onQueued`), and drops
 * the places ahead of it whose clients are gone, where the store can tell
 * (`ownerGone`): the line `locks.query()` shows holds no dead waiters. Until
 * `stop` aborts.
 */
async function tend(ctx: Context, line: WaitQueue, stop: AbortSignal, onQueued: (() => void) | undefined): Promise<void> {
  try {
    for (let first = true; ; first = false) {
      const ahead = await line.ahead()
      if (first) onQueued?.()
      if (!ahead?.owner || !ctx.adapter.capabilities?.ownerGone || !ctx.adapter.ownerGone || stop.aborted) return
      await ctx.adapter.ownerGone(ahead.owner, stop)
      await line.evict(ahead)
    }
  } catch {
    // Stopped, or the store failed: the place in line is only for `query()`.
  }
}
