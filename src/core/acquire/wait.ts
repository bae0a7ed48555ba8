/**
 * Waiting for what stands in the way of an acquire to change: the one wait
 * every state of the acquire machine (machine.ts) that waits uses.
 *
 * A {@link Sight} is what the waiter last saw in its way — the entries that
 * block it and where their changes show. The wait watches those places *from
 * the revisions it saw*, so a release or expiry that lands between the look
 * and the watch is still seen; it also wakes when the first blocker's TTL
 * should have run out (in case no event comes: a store that reports expiry
 * late) and, where the adapter can tell, when a blocker's client is gone.
 *
 * @module
 */
import type { Entry, WatchEvent } from '../contract/adapter'
import { sleep } from '../time/clock'
import type { Context } from '../context'
import { isZarisError } from '../contract/errors'
import { keepAlive } from '../time/keep-alive'
import { SEP } from '../contract/reserved'

/** A place whose changes a waiter watches: one key, or every entry under a reserved prefix, after a revision. */
export interface Watched {
  readonly key: string
  /**
   * Watch every entry directly under `key` (a reserved prefix that ends in
   * U+0001: shared holds, permits), not `key` itself. Deeper keys — which
   * belong to another lock whose name extends this one — do not count.
   */
  readonly prefix: boolean
  /** Only events after this revision count. */
  readonly from: number
}

/** What stands in the way of a claim, as last seen: never empty. */
export interface Sight {
  /** The entries whose end may free the claim: a holder, shared holders, permits, an intent. */
  readonly blockers: readonly Entry[]
  /** Where their changes show. */
  readonly watches: readonly Watched[]
}

/** The sight of one entry in the way: watched at its own key from its own revision. */
export function sightOf(entry: Entry): Sight {
  return { blockers: [entry], watches: [{ key: entry.key, prefix: false, from: entry.revision }] }
}

/**
 * What ended a wait: an event at a watched place, the time limit (`timeout`),
 * a blocker's TTL passing with no event or a watch that failed (`changed`:
 * look again), or a blocker's client known to be gone.
 */
export type Wake =
  | { readonly kind: 'event'; readonly event: WatchEvent }
  | { readonly kind: 'changed' }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'owner-gone'; readonly owner: string }

/** Extra ms past a blocker's TTL before looking again, so the store has expired it. */
const EXPIRY_GRACE = 5
/** How long after a failed watch the waiter looks again. */
const REWATCH_MS = 50
/**
 * The reasons of our own cleanup, made once: nobody reads them (see the
 * `.catch` below), and an Error made per wait costs a stack capture on the
 * path from a release event to the waiter's take.
 */
const CANCELLED = new Error('cancelled')
const SETTLED = new Error('settled')

/**
 * Resolves when something in `sight` may have changed, or after `limit` ms
 * (`timeout`); rejects with `signal`'s reason if it aborts, or with a
 * `ClosedError` when the client closes. `cancel` ends the wait quietly (it
 * then resolves `changed`, which nobody reads).
 *
 * What a wait sets up it undoes itself when it settles (watches, timer,
 * listeners): no AbortController of its own to abort, whose event dispatch
 * cost ~50 µs between a release event and the waiter's take (bench/FINDINGS.md
 * §16b). Only an adapter's `ownerGone`, which takes a signal, gets one.
 */
export function waitForChange(ctx: Context, sight: Sight, limit: number, signal: AbortSignal | undefined, cancel?: AbortSignal): Promise<Wake> {
  const undo: Array<() => void> = []
  let settled = false
  const letGo = keepAlive()

  const woken = new Promise<Wake>((resolve, reject) => {
    listen(cancel, () => reject(CANCELLED), undo)
    listen(signal, () => reject(signal!.reason), undo)
    undo.push(ctx.onClose(reject))
    for (const w of sight.watches) watchOne(ctx, w, () => settled, undo, resolve)
    // If no event comes (a store that reports expiry late), look again when the first TTL should be up.
    let expiresIn = Infinity
    for (const b of sight.blockers) if (b.ttl !== undefined) expiresIn = Math.min(expiresIn, b.ttl + EXPIRY_GRACE)
    const timeout = Math.min(limit, expiresIn)
    if (Number.isFinite(timeout)) {
      const timer = ctx.clock.setTimeout(() => resolve(timeout === limit ? { kind: 'timeout' } : { kind: 'changed' }), timeout)
      undo.push(() => ctx.clock.clearTimeout(timer))
    }
    if (ctx.adapter.capabilities?.ownerGone && ctx.adapter.ownerGone) {
      const owners = new Set<string>()
      for (const b of sight.blockers) if (b.owner !== undefined) owners.add(b.owner)
      if (owners.size > 0) {
        const stop = new AbortController()
        undo.push(() => stop.abort(SETTLED))
        for (const owner of owners) ctx.adapter.ownerGone(owner, stop.signal).then(() => resolve({ kind: 'owner-gone', owner }), () => {})
      }
    }
  })
  return woken
    .finally(() => {
      settled = true
      for (const u of undo) u()
      letGo()
    })
    .catch((err) => {
      // Our own cleanup is not an error; the caller's signal is.
      if (signal?.aborted) throw signal.reason
      if (isZarisError(err)) throw err
      return { kind: 'changed' } as Wake
    })
}

/** Calls `fn` once if `signal` aborts, until the wait undoes it. */
function listen(signal: AbortSignal | undefined, fn: () => void, undo: Array<() => void>): void {
  if (!signal) return
  signal.addEventListener('abort', fn, { once: true })
  undo.push(() => signal.removeEventListener('abort', fn))
}

function watchOne(ctx: Context, w: Watched, settled: () => boolean, undo: Array<() => void>, resolve: (wake: Wake) => void): void {
  const sink = {
    event: (ev: WatchEvent) => {
      if (watches(w, ev.key) && ev.revision > w.from) resolve({ kind: 'event', event: ev })
    },
    // A watch that cannot replay (history compacted, transport down): look again soon instead.
    error: () => {
      void sleep(ctx.clock, REWATCH_MS).then(() => resolve({ kind: 'changed' }))
    },
  }
  ctx.adapter.watch(w.key, sink, w.from).then(
    (unwatch) => (settled() ? unwatch() : undo.push(unwatch)),
    () => sink.error(),
  )
}

/** Whether `key` is at the watched place `w`. */
export function watches(w: Watched, key: string): boolean {
  return w.prefix ? key.startsWith(w.key) && !key.includes(SEP, w.key.length) : key === w.key
}

/** The entry a `put` event describes. */
export function entryOf(ev: WatchEvent): Entry {
  const e: Entry = { key: ev.key, value: ev.value ?? null, revision: ev.revision, created: ev.created ?? ev.revision }
  if (ev.owner !== undefined) e.owner = ev.owner
  if (ev.ttl !== undefined) e.ttl = ev.ttl
  return e
}
