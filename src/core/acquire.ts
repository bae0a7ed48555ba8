/**
 * Taking a hold: the one procedure behind `locks.acquire` and `leases.grant`.
 *
 * An attempt is `commit([{ key, revision: null }], [set])` — it succeeds only
 * if no live entry holds the key. While waiting, the waiter watches the key
 * *from the revision of the entry that beat it*, so a release or expiry that
 * lands between the failed attempt and the watch is still seen; it also wakes
 * when that entry's TTL should have run out (in case no event comes) and,
 * where the adapter can tell, when the holder's client is gone.
 *
 * Waiters stand in line (wait-queue.ts): only the first tries the key when it
 * frees, so a release costs one attempt, not one per waiter. A plain try
 * (`wait: 0`) does not queue and may take a free key before the line does.
 *
 * @module
 */
import type { Check, Entry, Op, Value, WatchEvent } from './adapter'
import { sleep } from './clock'
import type { Context } from './context'
import { isZarisError } from './errors'
import { keepAlive } from './keep-alive'
import type { Hold, HoldInit } from './hold'
import { checkBoolean, checkUserKey, checkOptions, checkSignal, checkTtl, checkWait } from './validate'
import { WaitQueue } from './wait-queue'

/** Options shared by `locks.acquire` and `leases.grant`. */
export interface AcquireOptions {
  /** Milliseconds the hold lives without renewal. Default: the client's `ttl` (30 000). */
  ttl?: number
  /**
   * Milliseconds to keep trying while someone else holds the key (woken by
   * release and expiry, not by polling). Default 0: one attempt. `Infinity` waits until `signal` aborts.
   */
  wait?: number
  /** Aborts a wait; the call then rejects with the signal's reason. */
  signal?: AbortSignal
  /** Renew in the background at a third of the TTL while held. Default true. */
  autoRenew?: boolean
  /**
   * Take the key over even if someone holds it. The old holder's token dies
   * at once: its fenced writes fail and its renewals report the loss.
   */
  steal?: boolean
}

export async function acquire<V extends Value, H extends Hold<V>>(
  ctx: Context,
  key: string,
  value: V,
  rawOptions: AcquireOptions | undefined,
  make: (init: HoldInit<V>) => H,
): Promise<H | null> {
  checkUserKey(key)
  const options = checkOptions<AcquireOptions>(rawOptions)
  const ttl = options.ttl === undefined ? ctx.ttl : checkTtl(options.ttl)
  const wait = options.wait === undefined ? 0 : checkWait(options.wait)
  const signal = checkSignal(options.signal)
  const autoRenew = checkBoolean(options.autoRenew, 'autoRenew') ?? true
  const steal = checkBoolean(options.steal, 'steal') ?? false
  ctx.assertOpen()
  signal?.throwIfAborted()
  await ctx.ready

  const waitUntil = ctx.clock.now() + wait
  const set = { type: 'set' as const, key, value, ttl, owner: ctx.id }
  /** One try at the key; with `place`, the same commit takes us out of the line. */
  const attempt = async (current: Entry | undefined, fresh: boolean, place?: Entry) => {
    const sentAt = ctx.clock.now()
    const checks: Check[] = [current ? { key, revision: current.revision } : { key, revision: null }]
    const ops: Op[] = [fresh ? { ...set, fresh } : set]
    if (place) {
      checks.push({ key: place.key, created: place.created })
      ops.push({ type: 'delete', key: place.key })
    }
    const r = await ctx.adapter.commit(checks, ops)
    if (r.ok) {
      const entry = r.entries[0]!
      return { hold: make({ key, value, token: entry.created, revision: entry.revision, ttl, sentAt, autoRenew }) }
    }
    return { current: r.failed.find((f) => f.key === key)?.entry, lostPlace: r.failed.some((f) => f.key !== key) }
  }

  // Try at once; `steal` retries over whoever holds it.
  let current: Entry | undefined
  for (;;) {
    signal?.throwIfAborted()
    ctx.assertOpen()
    const r = await attempt(undefined, false)
    if (r.hold) return r.hold
    current = r.current
    if (current && steal) {
      const s = await attempt(current, true)
      if (s.hold) return s.hold
      continue
    }
    if (current) break // held: wait below, or give up
    // it vanished between the check and now: try again at once
  }
  if (waitUntil - ctx.clock.now() <= 0) return null

  const line = WaitQueue.for(ctx, key)
  let first = line === undefined // nobody is ahead of us in line (or the key has no line)
  // A wait on the held key begun while we join the line, so that joining
  // does not delay the handover when we turn out to be first.
  let early: { promise: Promise<Wake>; cancel: AbortController } | undefined
  const dropEarly = () => {
    early?.cancel.abort()
    early = undefined
  }
  try {
    for (;;) {
      signal?.throwIfAborted()
      ctx.assertOpen()
      const left = waitUntil - ctx.clock.now()
      if (left <= 0) return null
      let woke: Wake | undefined
      if (!first) {
        if (current && !early && !line!.placed) {
          const cancel = new AbortController()
          early = { promise: waitForChange(ctx, current, left, signal, cancel.signal), cancel }
        }
        const placing = line!.ahead()
        const raced = early ? await Promise.race([placing, early.promise.then((): typeof EARLY => EARLY)]) : await placing
        if (raced === EARLY) {
          // The key changed before we knew our place: act on it now, as the
          // first in line would (at worst one extra try, never a second holder).
          placing.catch(() => {})
          woke = await early!.promise
          early = undefined
        } else if (raced) {
          dropEarly()
          // Wait for the waiter ahead to leave the line. The patrol covers one
          // that died in line on a store that cannot tell us: if the key is
          // free then, try it.
          const behind = await waitForChange(ctx, raced, Math.min(left, PATROL), signal)
          if (behind === 'owner-gone') await line!.evict(raced)
          current = undefined // unknown until we look
          if (behind !== 'timeout' || waitUntil - ctx.clock.now() <= 0) continue
          current = await ctx.adapter.get(key)
          if (current) continue
        } else {
          // The waiter ahead just left, most often by taking the key: look before trying.
          if (current === undefined) current = await ctx.adapter.get(key)
          first = true
        }
      }
      if (woke === undefined) {
        if (!current) {
          dropEarly()
          const r = await attempt(undefined, false, line?.entry)
          if (r.hold) return r.hold
          if (r.lostPlace) {
            line!.lost()
            first = false
          }
          current = r.current
          continue
        }
        if (early) woke = await early.promise
        else woke = await waitForChange(ctx, current, left, signal)
        early = undefined
      }
      if (woke === 'owner-gone') {
        // The holder's client is dead: take its entry over, but only if it is
        // still the very entry we saw (same revision, so same owner and life).
        const s = await attempt(current!, true, line?.entry)
        if (s.hold) return s.hold
        if (s.lostPlace) {
          line!.lost()
          first = false
        }
        current = s.current
      } else if (typeof woke === 'object') {
        // A put is a renewal or a new holder: wait on it; a delete or expiry frees the key.
        current = woke.type === 'put' ? entryOf(woke) : undefined
      } else if (woke === 'changed') {
        current = await ctx.adapter.get(key)
      }
    }
  } finally {
    dropEarly()
    line?.leave()
  }
}

const EARLY = Symbol('early')

function entryOf(ev: WatchEvent): Entry {
  const e: Entry = { key: ev.key, value: ev.value ?? null, revision: ev.revision, created: ev.created ?? ev.revision }
  if (ev.owner !== undefined) e.owner = ev.owner
  if (ev.ttl !== undefined) e.ttl = ev.ttl
  return e
}

/** How often a waiter behind others checks whether the key is free, in ms. */
const PATROL = 1_000

/** What ended a wait: the first event after the entry, its time, its owner's death, or `changed` (look again). */
type Wake = WatchEvent | 'changed' | 'timeout' | 'owner-gone'

/** Resolves when `current` may have stopped holding its key; rejects if `signal` aborts. */
function waitForChange(ctx: Context, current: Entry, left: number, signal: AbortSignal | undefined, cancel?: AbortSignal): Promise<Wake> {
  const stop = new AbortController()
  cancel?.addEventListener('abort', () => stop.abort(new Error('cancelled')), { once: true })
  const letGo = keepAlive()
  const onAbort = () => stop.abort(signal!.reason)
  signal?.addEventListener('abort', onAbort, { once: true })
  const unregister = ctx.onClose((reason) => stop.abort(reason))

  const woken = new Promise<Wake>((resolve, reject) => {
    stop.signal.addEventListener('abort', () => reject(stop.signal.reason), { once: true })
    const sink = {
      event: (ev: WatchEvent) => {
        if (ev.key === current.key && ev.revision > current.revision) resolve(ev)
      },
      // A watch that cannot replay (history compacted, transport down): retry soon instead.
      error: () => {
        void sleep(ctx.clock, 50).then(() => resolve('changed'))
      },
    }
    ctx.adapter.watch(current.key, sink, current.revision).then(
      (unwatch) => (stop.signal.aborted ? unwatch() : stop.signal.addEventListener('abort', unwatch, { once: true })),
      () => sink.error(),
    )
    // If no event comes (a store that reports expiry late), look again when the TTL should be up.
    const expiresIn = current.ttl === undefined ? Infinity : current.ttl + 5
    const timeout = Math.min(left, expiresIn)
    if (Number.isFinite(timeout)) sleep(ctx.clock, timeout, stop.signal).then(() => resolve(timeout === left ? 'timeout' : 'changed'), () => {})
    if (ctx.adapter.capabilities?.ownerGone && ctx.adapter.ownerGone && current.owner !== undefined) {
      ctx.adapter.ownerGone(current.owner, stop.signal).then(() => resolve('owner-gone'), () => {})
    }
  })
  return woken.finally(() => {
    signal?.removeEventListener('abort', onAbort)
    unregister()
    stop.abort(new Error('settled'))
    letGo()
  }).catch((err) => {
    // Our own cleanup abort is not an error; the caller's signal is.
    if (signal?.aborted) throw signal.reason
    if (isZarisError(err)) throw err
    return 'changed' as Wake
  })
}
