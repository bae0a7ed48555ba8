/**
 * One `request()`, from its turn to its settling, as the Web Locks API's
 * "request a lock" and "process the lock request queue" run it — over
 * `client.locks.acquire`, asked to respect the store's line so that it
 * never takes a key ahead of a waiter (zaris's plain try may).
 *
 * Decided here, where the specification says nothing a store must know:
 * - A hold lost while the callback runs (stolen — the specification's case
 *   — or expired, or the client closed) rejects the request at once with an
 *   `AbortError` `DOMException`, whose `cause` is the `HoldEndedError`
 *   saying which; the callback runs on, and `lock.signal` tells it.
 * - A release that cannot reach the store does not fail the request: the
 *   callback's work was done under the lock, which frees itself at its TTL.
 * - A lock granted after the request was aborted is released at once, and
 *   its callback never runs.
 * - A request settles only once the waiters its release let through hold
 *   the lock (handover.ts), as the specification's release step grants them.
 *
 * @module
 */
import type { Client } from '../core/client'
import { IN_LINE, type Lock, type LockMode, type LockOptions } from '../core/locks'
import { grantsAfterRelease } from './handover'
import { someoneWaits } from './line'
import { WebLock } from './lock'
import type { Parsed } from './options'
import type { Order, Turn } from './order'

/** Runs request `r` on `client` in `order`; resolves or rejects as the specification's request promise does. */
export function runRequest(client: Client, order: Order, r: Parsed): Promise<unknown> {
  const turn = order.enter(r.name)
  return new Promise<unknown>((resolve, reject) => {
    let settled = false
    // Until the callback is called, an abort rejects the request at once (the specification's "signal to abort the request").
    const onAbort = () => settle(false, r.signal!.reason)
    const settle = (ok: boolean, value: unknown) => {
      // A signal kept for many requests keeps no listener of one that ended.
      r.signal?.removeEventListener('abort', onAbort)
      if (settled) return
      settled = true
      if (ok) resolve(value)
      else reject(value)
    }
    r.signal?.addEventListener('abort', onAbort, { once: true })
    const callbackRuns = () => {
      r.signal?.removeEventListener('abort', onAbort)
      return !settled
    }
    drive(client, order, r, turn, callbackRuns, settle).catch((err: unknown) => settle(false, err))
  })
}

type Settle = (ok: boolean, value: unknown) => void

async function drive(client: Client, order: Order, r: Parsed, turn: Turn, callbackRuns: () => boolean, settle: Settle): Promise<void> {
  await turn.mayStart
  let lock: Lock | null
  try {
    if (r.signal?.aborted) throw r.signal.reason
    lock = await client.locks.acquire(r.key, acquireOptions(r, turn))
  } catch (err) {
    turn.reached()
    settle(false, err)
    turn.done()
    return
  }
  turn.reached()
  await turn.mayGo
  if (!callbackRuns()) {
    // Aborted before its callback could run: the lock goes back at once.
    await lock?.release().catch(() => {})
    turn.done()
    return
  }
  if (!lock) {
    const missed = call(r.callback, null)
    turn.done()
    await missed.then((v) => settle(true, v), (err: unknown) => settle(false, err))
    return
  }
  await hold(client, lock, r, turn, settle, () => order.settled())
}

function acquireOptions(r: Parsed, turn: Turn): LockOptions {
  const queued = () => {
    turn.reached()
    turn.done()
  }
  const options: LockOptions & { [IN_LINE]: { onQueued: () => void } } = {
    mode: r.mode,
    autoRenew: r.autoRenew,
    // A steal never waits; ifAvailable only asks.
    wait: r.ifAvailable || r.steal ? 0 : Infinity,
    steal: r.steal,
    [IN_LINE]: { onQueued: queued },
  }
  if (r.ttl !== undefined) options.ttl = r.ttl
  if (r.signal) options.signal = r.signal
  return options
}

/** Runs the callback with the granted `lock`, releases it when the callback settles, and settles the request. */
async function hold(client: Client, lock: Lock, r: Parsed, turn: Turn, settle: Settle, earlier: () => Promise<void>): Promise<void> {
  const lost = () => {
    const reason = lock.signal.reason as { code?: string; message?: string } | undefined
    if (reason?.code !== 'RELEASED') settle(false, lostError(r.name, lock.mode, reason))
  }
  // Granted by a commit answered after the TTL, the lock has already ended: no abort is to come.
  if (lock.signal.aborted) lost()
  else lock.signal.addEventListener('abort', lost, { once: true })
  const running = call(r.callback, new WebLock(r.name, lock))
  turn.done()
  const outcome = await running.then((value) => ({ ok: true, value }), (value: unknown) => ({ ok: false, value }))
  await earlier()
  // A release the store did not answer ends the hold as released: the request stands on the callback's outcome.
  const released = await lock.release().catch(() => false)
  // As the specification's release step: the requests it lets through are granted before the request settles.
  if (released && (await someoneWaits(client, r.key))) await grantsAfterRelease(client, r.key)
  settle(outcome.ok, outcome.value)
}

/** Calls `fn`, turning a synchronous throw into a rejection (the specification's "invoke"). */
function call(fn: (lock: WebLock | null) => unknown, lock: WebLock | null): Promise<unknown> {
  try {
    return Promise.resolve(fn(lock))
  } catch (err) {
    return Promise.reject(err)
  }
}

/** The rejection of a request whose hold ended before its callback settled. */
function lostError(name: string, mode: LockMode, reason: { code?: string; message?: string } | undefined): DOMException {
  const how = reason?.code === 'STOLEN' ? 'stolen' : reason?.code === 'EXPIRED' ? 'expired' : 'lost'
  const err = new DOMException(`the ${mode} lock ${JSON.stringify(name)} was ${how} while its callback ran${reason?.message ? `: ${reason.message}` : ''}`, 'AbortError')
  Object.defineProperty(err, 'cause', { value: reason, configurable: true, writable: true })
  return err
}
