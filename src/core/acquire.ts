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
 * Waiters are not queued: on a release every waiter retries and one wins.
 *
 * @module
 */
import type { Entry, Value, WatchEvent } from './adapter'
import { sleep } from './clock'
import type { Context } from './context'
import { isZarisError } from './errors'
import { keepAlive } from './keep-alive'
import type { Hold, HoldInit } from './hold'
import { checkBoolean, checkKey, checkOptions, checkSignal, checkTtl, checkWait } from './validate'

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
  checkKey(key)
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
  const attempt = async (current: Entry | undefined, fresh: boolean) => {
    const sentAt = ctx.clock.now()
    const check = current ? { key, revision: current.revision } : { key, revision: null }
    const r = await ctx.adapter.commit([check], [fresh ? { ...set, fresh } : set])
    if (r.ok) {
      const entry = r.entries[0]!
      return { hold: make({ key, value, token: entry.created, revision: entry.revision, ttl, sentAt, autoRenew }) }
    }
    return { current: r.failed[0]?.entry }
  }

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
    const left = waitUntil - ctx.clock.now()
    if (!current || left <= 0) {
      if (!current) continue // it vanished between the check and now: try again at once
      return null
    }
    const woke = await waitForChange(ctx, current, left, signal)
    if (woke === 'owner-gone') {
      // The holder's client is dead: take its entry over, but only if it is
      // still the very entry we saw (same revision, so same owner and life).
      const s = await attempt(current, true)
      if (s.hold) return s.hold
    }
  }
}

type Wake = 'changed' | 'timeout' | 'owner-gone'

/** Resolves when `current` may have stopped holding its key; rejects if `signal` aborts. */
function waitForChange(ctx: Context, current: Entry, left: number, signal: AbortSignal | undefined): Promise<Wake> {
  const stop = new AbortController()
  const letGo = keepAlive()
  const onAbort = () => stop.abort(signal!.reason)
  signal?.addEventListener('abort', onAbort, { once: true })
  const unregister = ctx.onClose((reason) => stop.abort(reason))

  const woken = new Promise<Wake>((resolve, reject) => {
    stop.signal.addEventListener('abort', () => reject(stop.signal.reason), { once: true })
    const sink = {
      event: (ev: WatchEvent) => {
        if (ev.key === current.key && ev.revision > current.revision) resolve('changed')
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
