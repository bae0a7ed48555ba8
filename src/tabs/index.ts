/**
 * zaris/tabs: locks, leader election, watch and fenced writes among the tabs
 * of an origin — for a page that needs those and not the full client. No
 * `Client`, acquire machine, wait line, reaper or change feed: the
 * browser's Web Locks (`navigator.locks`) keep each key's line and free a
 * closed tab's place at once; one IndexedDB commit per hold keeps the
 * fencing token, the TTL and the new-life rule; BroadcastChannel carries
 * the news.
 *
 * It reads and writes the records a full client writes over
 * `zaris://idb/<namespace>`, through the IndexedDB adapter's own code, and
 * asks for the same Web Locks: a tab using this entry and a tab using
 * `connect('zaris://idb/<namespace>')` exclude each other on one key, see
 * each other's writes and elect together. What it leaves to the full client:
 * shared locks, several keys at once, semaphores, counters, leases with a
 * value, jobs, `list`, and stores other than the tabs' own.
 *
 * @module
 */
import type { Entry, Value } from '../core/contract/adapter'
import { ClosedError, FencedError, InvalidArgumentError, UnsupportedError } from '../core/contract/errors'
import { randomId } from '../core/contract/ids'
import { checkBoolean, checkKey, checkOptions, checkPrefix, checkRevision, checkSignal, checkTtl, checkUserKey, checkValue, checkWait } from '../core/contract/validate'
import { expired, toEntry } from '../adapters/kit/write'
import { TabElection, type TabElectionOptions } from '../elect/index'
import { shareStore, unshareStore, type TermStore } from '../elect/store'
import type { Running } from '../elect/term'
import { leave } from './leave'
import { acquire, TabLock } from './lock'
import { TabWatch, type TabWatchOptions } from './watch'

export { TabElection, type TabElectionOptions, type Term, type EndCode, type Leader } from '../elect/index'
export { TabLock } from './lock'
export { TabWatch, type TabWatchOptions } from './watch'

/** Options of {@link tabs}. */
export interface TabsOptions {
  /** The owner id its locks and terms are written with (a full client's `id`). Default: random. */
  id?: string
  /** The TTL of locks and terms in ms, unless a call names one. Default 30 000. */
  ttl?: number
}

/** Options of `locks.acquire`. */
export interface TabLockOptions {
  /** ms the lock lives without renewal (it renews every third of it). Default: the TTL of {@link tabs}. */
  ttl?: number
  /** ms to wait while another tab holds it; `Infinity` until `signal` aborts. Default 0: try once. */
  wait?: number
  /** Aborts a wait: the call rejects with `signal.reason`. */
  signal?: AbortSignal
}

/** A fence: a held lock or term of this store (`{ key, token }`). */
export interface Fence {
  /** The lock's (or election's) key. */
  key: string
  /** The token it holds: the fenced call is refused once the key carries another life. */
  token: number
}

/**
 * The tabs of an origin on `zaris://idb/<namespace>`.
 *
 * @example
 * import { tabs } from 'zaris/tabs'
 * const app = tabs('app')
 * const lock = await app.locks.acquire('lock:report', { ttl: 10_000, wait: 5_000 })
 * if (lock) await app.put('report:status', 'running', { fence: lock })
 */
export function tabs(namespace?: string, options?: TabsOptions): Tabs {
  return new Tabs(namespace, options)
}

/**
 * The namespace's locks, elections, watches and entries, as seen from this tab; `close()` when done.
 *
 * @example
 * const app = tabs('app', { ttl: 10_000 })
 * const leader = app.election('leader:sync')
 * leader.addEventListener('elected', () => startSync())
 * void leader.campaign()
 */
export class Tabs implements AsyncDisposable {
  /** The store: `zaris://idb/<namespace>`'s IndexedDB database. */
  readonly namespace: string
  /** The owner id this tab's locks and terms are written with. */
  readonly id: string
  /** Exclusive locks with fencing tokens. */
  readonly locks: { acquire(key: string, options?: TabLockOptions): Promise<TabLock | null> }
  readonly #ttl: number
  readonly #store: TermStore
  readonly #held = new Set<Running>()
  readonly #opened = new Set<TabWatch>()
  /** Elections are few and long-lived: kept until this closes. */
  readonly #elections = new Set<TabElection>()
  #closed = false
  readonly #closer = new AbortController()

  constructor(namespace?: string, rawOptions?: TabsOptions) {
    const g = globalThis as { indexedDB?: unknown; BroadcastChannel?: unknown }
    if (!g.indexedDB || !g.BroadcastChannel) {
      throw new UnsupportedError('zaris/tabs works among the tabs of an origin and needs IndexedDB and BroadcastChannel, which this environment does not have: use connect() from zaris')
    }
    const options = checkOptions<TabsOptions>(rawOptions)
    this.namespace = checkKey(namespace ?? 'default', 'namespace')
    this.id = options.id === undefined ? randomId() : checkKey(options.id, 'id')
    this.#ttl = options.ttl === undefined ? 30_000 : checkTtl(options.ttl)
    this.#store = shareStore(this.namespace)
    this.locks = { acquire: (key, o) => this.#acquire(key, o) }
  }

  async #acquire(key: string, rawOptions?: TabLockOptions): Promise<TabLock | null> {
    checkUserKey(key)
    const o = checkOptions<TabLockOptions>(rawOptions)
    const ttl = o.ttl === undefined ? this.#ttl : checkTtl(o.ttl)
    const wait = o.wait === undefined ? 0 : checkWait(o.wait)
    const signal = checkSignal(o.signal)
    this.#assertOpen()
    // Closing this object ends its waits too: a lock granted after close() would be nobody's to release.
    const stop = signal ? AbortSignal.any([signal, this.#closer.signal]) : this.#closer.signal
    return acquire({ store: this.#store, key, owner: this.id, ttl, wait, signal: stop, held: this.#held })
  }

  /**
   * An election among the tabs on this namespace (the one `zaris/elect`
   * and a full client's `client.election(name)` run), with this tab's id.
   *
   * @example
   * const leader = app.election('leader:sync')
   * const term = await leader.campaign()
   */
  election(name: string, options?: Omit<TabElectionOptions, 'namespace' | 'id'>): TabElection {
    this.#assertOpen()
    const o = checkOptions<TabElectionOptions>(options)
    const e = new TabElection(name, { ttl: this.#ttl, ...o, namespace: this.namespace, id: this.id })
    this.#elections.add(e)
    return e
  }

  /**
   * The changes of `key` (or of every key under it, with `prefix`), by every
   * tab, in revision order: iterate with `for await`.
   *
   * @example
   * for await (const ev of app.watch('status:', { prefix: true })) console.log(ev.key, ev.value)
   */
  watch(key: string, options?: TabWatchOptions): TabWatch {
    const o = checkOptions<TabWatchOptions>(options)
    const prefix = checkBoolean(o.prefix, 'prefix') ?? false
    if (prefix) checkPrefix(key)
    else checkUserKey(key)
    const from = o.fromRevision === undefined ? undefined : checkRevision(o.fromRevision, 'fromRevision')
    if (from === null) throw new InvalidArgumentError('fromRevision must be a revision (an integer >= 0)')
    const signal = checkSignal(o.signal)
    this.#assertOpen()
    const w = new TabWatch(this.#store, key, prefix, signal, from, () => this.#opened.delete(w))
    this.#opened.add(w)
    return w
  }

  /**
   * The live entry at `key`, or `undefined`.
   *
   * @example
   * const status = (await app.get('report:status'))?.value
   */
  async get<V extends Value = Value>(key: string): Promise<Entry<V> | undefined> {
    checkUserKey(key)
    this.#assertOpen()
    const e = await this.#store.read(key)
    const now = Date.now()
    return e && !expired(e, now) ? (toEntry(e, now) as Entry<V>) : undefined
  }

  /**
   * Writes `value` at `key`; with `fence`, only while that lock or term
   * still holds its token (`FencedError` otherwise, and nothing is written).
   *
   * @example
   * await app.put('sync:cursor', 42, { fence: lock })
   */
  async put<V extends Value>(key: string, value: V, options?: { fence?: Fence; ttl?: number }): Promise<Entry<V>> {
    checkUserKey(key)
    checkValue(value)
    const o = checkOptions<{ fence: Fence; ttl: number }>(options)
    const ttl = o.ttl === undefined ? undefined : checkTtl(o.ttl)
    const r = await this.#commit('put', key, o.fence, [ttl === undefined ? { type: 'set', key, value } : { type: 'set', key, value, ttl }])
    return r.entries[0] as Entry<V>
  }

  /**
   * Deletes `key` (only under `fence`, if given): true if a live entry was deleted.
   *
   * @example
   * await app.delete('report:status', { fence: lock })
   */
  async delete(key: string, options?: { fence?: Fence }): Promise<boolean> {
    checkUserKey(key)
    const o = checkOptions<{ fence: Fence }>(options)
    const r = await this.#commit('delete', key, o.fence, [{ type: 'delete', key }])
    return r.deleted.includes(key)
  }

  async #commit(what: string, key: string, fence: Fence | undefined, ops: Parameters<TermStore['commit']>[1]) {
    if (fence !== undefined && (typeof fence !== 'object' || fence === null || typeof fence.token !== 'number')) {
      throw new InvalidArgumentError('fence must be a held lock or term (an object with key and token)')
    }
    const checks = fence ? [{ key: checkUserKey(fence.key, 'fence.key'), created: fence.token }] : []
    this.#assertOpen()
    const r = await this.#store.commit(checks, ops)
    if (!r.ok) throw new FencedError(`${what} ${JSON.stringify(key)} refused: ${JSON.stringify(fence!.key)} is no longer held with token ${fence!.token}`)
    return r
  }

  /** Releases this tab's locks, closes its elections and watches; the store closes with the last user of it in the page. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#closer.abort(new ClosedError('this tabs object was closed'))
    await Promise.all([...[...this.#held].map((r) => r.resign(leave)), ...[...this.#opened, ...this.#elections].map((o) => o.close())])
    unshareStore(this.#store)
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  #assertOpen(): void {
    if (this.#closed) throw new ClosedError('this tabs object was closed')
  }
}
