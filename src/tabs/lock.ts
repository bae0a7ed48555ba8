/**
 * An exclusive lock of zaris/tabs: the same steps, Web Lock and entry as a
 * full client's gated acquire over `zaris://idb` (and as zaris/elect's
 * campaign, whose code it runs: a term is a lock with a value), so tabs of
 * both kinds exclude each other on one key.
 *
 * - `wait: 0` (the default) tries once: the gate only if nobody holds or
 *   waits for it (`ifAvailable`), then one commit through it.
 * - A wait campaigns until it holds, past a frozen holder's TTL too, and
 *   answers `null` when the wait runs out.
 *
 * @module
 */
import type { Value } from '../core/contract/adapter'
import { WebLockGate } from '../adapters/indexeddb/gate'
import { expired } from '../adapters/kit/write'
import { win, type Won } from '../elect/campaign'
import { Running } from '../elect/term'
import { leave } from './leave'
import type { TermStore } from '../elect/store'

/**
 * A held lock: a fence for writes (`{ key, token }`), renewed every third of its TTL until released.
 *
 * @example
 * await using lock = await app.locks.acquire('lock:report', { wait: 5_000 })
 * lock?.signal.addEventListener('abort', () => stopWork())
 */
export class TabLock implements AsyncDisposable {
  /** The lock's key. */
  readonly key: string
  /** The fencing token: the revision that started this hold; higher than every earlier holder's. */
  readonly token: number
  /** Aborts when the hold ends; its reason is a `HoldEndedError` whose `code` says why (`RELEASED`, `EXPIRED`, `STOLEN`, `LOST`, `CLOSED`). */
  readonly signal: AbortSignal
  readonly #running: Running

  /** @internal Made by `tabs(...).locks.acquire`. */
  constructor(running: Running) {
    this.#running = running
    this.key = running.key
    this.token = running.token
    this.signal = running.signal
  }

  /** True while the hold lasts (before its own deadline, not ended). */
  get held(): boolean {
    return this.#running.held
  }

  /**
   * Lets the lock go: the next tab in line takes it over at once. True if it
   * was still held.
   *
   * @example
   * await lock.release()
   */
  release(): Promise<boolean> {
    return this.#running.resign(leave)
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release()
  }
}

/** What an acquire needs. */
export interface Ask {
  store: TermStore
  key: string
  owner: string
  ttl: number
  wait: number
  signal: AbortSignal | undefined
  /** The holds of the caller: the new one joins while it lasts (what closing the caller releases). */
  held: Set<Running>
}

/** Takes the lock, waiting up to `ask.wait` ms; null if it stays held elsewhere. Rejects with the signal's reason. */
export async function acquire(ask: Ask): Promise<TabLock | null> {
  const { store, key, owner, ttl } = ask
  const value: Value = null
  let won: Won | undefined
  if (ask.wait === 0) {
    ask.signal?.throwIfAborted()
    won = await tryOnce(ask)
  } else {
    const timeout = Number.isFinite(ask.wait) ? AbortSignal.timeout(ask.wait) : undefined
    const stop = AbortSignal.any([ask.signal, timeout].filter((s) => s !== undefined))
    try {
      won = await win({ store, name: key, owner, value, ttl, signal: stop })
    } catch (err) {
      if (ask.signal?.aborted || !timeout?.aborted) throw err
      return null
    }
  }
  if (!won) return null
  const running = new Running(store, key, owner, value, ttl, won, (r) => ask.held.delete(r))
  // Aborted (or its owner closed) while the one try was under way: let it go again.
  if (ask.signal?.aborted) {
    await running.resign(leave)
    throw ask.signal.reason
  }
  ask.held.add(running)
  return new TabLock(running)
}

/** One try: the gate if it is free now, then one commit through it (without Web Locks, one commit if the key is free). */
async function tryOnce({ store, key, owner, ttl }: Ask): Promise<Won | undefined> {
  const locks = store.locks
  if (locks) await store.register(owner)
  const gate = locks && new WebLockGate(locks, store.namespace, key, { ifAvailable: true })
  if (gate && !(await gate.granted)) {
    gate.release()
    return undefined
  }
  if (!gate) {
    const e = await store.read(key)
    if (e && !expired(e, Date.now())) return undefined
  }
  const sentAt = performance.now()
  try {
    const r = await store.commit([{ key, revision: null }], [{ type: 'set', key, value: null, ttl, owner }], gate && WebLockGate.through(gate, store.namespace))
    if (r.ok) return { token: r.entries[0]!.created, revision: r.revision, sentAt, gate }
  } catch (err) {
    gate?.release()
    throw err
  }
  gate?.release()
  return undefined
}
