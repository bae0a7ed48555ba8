/**
 * The client: key-value operations plus the lock, lease, counter, watch and
 * election APIs, all on one {@link Adapter}. It knows nothing of any
 * particular store.
 *
 * @module
 */
import type { Adapter, Check, Entry, Value } from './contract/adapter'
import type { Clock } from './time/clock'
import type { Closable, Context } from './context'
import { Counters } from './counters'
import { Election, type ElectionOptions } from './election'
import { ClosedError, ConflictError, FencedError, InvalidArgumentError, type HoldEndedError } from './contract/errors'
import { fenceChecks, fenceRefused, type Fence } from './hold/hold'
import { randomId } from './contract/ids'
import { Jobs } from './jobs'
import { Leases } from './leases'
import { Locks } from './locks'
import { defaultClock } from './time/page-clock'
import { listAll } from './contract/pages'
import { isReservedKey, SEP } from './contract/reserved'
import { Semaphores } from './semaphores'
import { checkUserKey, checkOptions, checkOwner, checkPrefix, checkRevision, checkTtl, checkValue } from './contract/validate'
import { Watch, type WatchOptions } from './watch'

/** Options of a client (and of `connect`). */
export interface ClientOptions {
  /** This client's id, recorded as the owner of what it holds. Default: random. */
  id?: string
  /** The default TTL in ms of locks, leases and elections. Default 30 000. */
  ttl?: number
  /**
   * The clock the client counts TTLs on. Default: in a page, the page's
   * background clock (its timers survive a hidden tab); elsewhere the
   * system's monotonic clock.
   */
  clock?: Clock
}

/** What a `holdend` event tells: which hold ended, and why (`reason.code`: `EXPIRED`, `STOLEN` or `LOST`). */
export interface HoldEndDetail {
  /** The hold's key (`hold.key`). */
  key: string
  /** The hold's fencing token. */
  token: number
  /** What its signal aborted with. */
  reason: HoldEndedError
}

/** The event a client dispatches when one of its holds ends other than by its own release or close. */
export type HoldEndEvent = CustomEvent<HoldEndDetail>

/** Options of {@link Client.put}. */
export interface PutOptions {
  /** Milliseconds until the entry expires (on the store's clock). Default: never. */
  ttl?: number
  /** Write only if the entry is at this revision (`null`: only if it does not exist). Else `ConflictError`. */
  ifRevision?: number | null
  /** Write only while this lock (or lease) is still held with its token. Else `FencedError`. */
  fence?: Fence
}

/** Options of {@link Client.delete}. */
export interface DeleteOptions {
  /** Delete only if the entry is at this revision. Else `ConflictError`. */
  ifRevision?: number
  /** Delete only while this lock (or lease) is still held with its token. Else `FencedError`. */
  fence?: Fence
}

/** The default TTL of holds, in ms. */
export const DEFAULT_TTL = 30_000

/**
 * A connection to one store. Get one from `connect(url)`, or build one from an adapter.
 *
 * A client is an `EventTarget` (the platform's own, in a page and in Node):
 * it dispatches `holdend` when a lock, permit, lease or election term of its
 * own ends other than by its own release or close — expired, stolen or lost —
 * with `detail: { key, token, reason }`: the one place to log a lost lock.
 *
 * @example
 * import { Client } from 'zaris'
 * import { memoryAdapter } from 'zaris/memory'
 * const client = new Client(memoryAdapter({ namespace: 'demo' }), { id: 'worker-1' })
 * client.addEventListener('holdend', (e) => console.warn('lost', e.detail.key, e.detail.reason.code))
 */
export class Client extends EventTarget implements AsyncDisposable {
  /** This client's id: the owner of its locks, leases and candidacies. */
  readonly id: string
  /** Locks with TTLs and fencing tokens. */
  readonly locks: Locks
  /** Keys that live while kept alive. */
  readonly leases: Leases
  /** Atomic counters. */
  readonly counters: Counters
  /** Semaphores: at most `limit` holders of a key at once. */
  readonly semaphores: Semaphores
  /** Jobs run once per slot, however many instances fire them. */
  readonly jobs: Jobs
  /** The adapter under this client. */
  readonly adapter: Adapter

  readonly #ctx: Context
  readonly #open = new Set<Closable>()
  #closed = false
  readonly #onClose = new Set<(reason: Error) => void>()
  #closing: Promise<void> | undefined

  constructor(adapter: Adapter, rawOptions?: ClientOptions) {
    super()
    const options = checkOptions<ClientOptions>(rawOptions)
    // The id is written as the owner of what the client holds: the store must keep it unchanged.
    this.id = options.id === undefined ? randomId() : checkOwner(options.id, 'id')
    // U+0001 ends a key inside zaris's own keys (which carry ids), and starts its own owners (a shared lock's group).
    if (this.id.includes(SEP)) throw new InvalidArgumentError('id must not contain U+0001: zaris keeps that character for its own keys and owners')
    this.adapter = adapter
    const registered = this.#registration(adapter)
    this.#ctx = {
      adapter,
      lost: (detail) => this.dispatchEvent(new CustomEvent('holdend', { detail })),
      clock: options.clock ?? defaultClock(),
      id: this.id,
      ttl: options.ttl === undefined ? DEFAULT_TTL : checkTtl(options.ttl),
      get ready() {
        return registered()
      },
      open: this.#open,
      onClose: (fn) => {
        if (this.#closed) {
          fn(new ClosedError())
          return () => {}
        }
        this.#onClose.add(fn)
        return () => this.#onClose.delete(fn)
      },
      assertOpen: () => {
        if (this.closed) throw new ClosedError()
      },
    }
    this.locks = new Locks(this.#ctx)
    this.leases = new Leases(this.#ctx)
    this.counters = new Counters(this.#ctx)
    this.semaphores = new Semaphores(this.#ctx)
    this.jobs = new Jobs(this.#ctx, this.locks)
  }

  /**
   * Registers this client with an adapter that follows owners' lives (starting
   * now); returns what a hold awaits before its first write. A failed
   * registration (a chunk the network lost) is reported to the holds that
   * awaited it and tried again by the next.
   */
  #registration(adapter: Adapter): () => Promise<void> {
    if (!adapter.capabilities?.ownerGone || !adapter.registerOwner) return () => Promise.resolve()
    let current: Promise<void> | undefined
    const register = () => {
      if (current) return current
      const attempt = (current = adapter.registerOwner!(this.id))
      attempt.catch(() => {
        if (current === attempt) current = undefined
      })
      return attempt
    }
    register()
    return register
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#closed
  }

  /**
   * Writes `value` at `key` and resolves the entry written.
   *
   * @example
   * await client.put('report:status', 'running', { ttl: 60_000 })
   * await client.put('report:status', 'done', { fence: lock })
   */
  async put<V extends Value>(key: string, value: V, options?: PutOptions): Promise<Entry<V>> {
    checkUserKey(key)
    checkValue(value)
    const o = checkOptions<PutOptions>(options)
    const ttl = o.ttl === undefined ? undefined : checkTtl(o.ttl)
    const checks = this.#conditions(key, o)
    this.#ctx.assertOpen()
    const r = await this.adapter.commit(checks, [ttl === undefined ? { type: 'set', key, value } : { type: 'set', key, value, ttl }])
    if (!r.ok) throw this.#refusal('put', key, r.failed, o.fence)
    return r.entries[0] as Entry<V>
  }

  /**
   * The live entry at `key`, or `undefined`.
   *
   * @example
   * const status = (await client.get('report:status'))?.value
   */
  async get<V extends Value = Value>(key: string): Promise<Entry<V> | undefined> {
    checkUserKey(key)
    this.#ctx.assertOpen()
    return (await this.adapter.get(key)) as Entry<V> | undefined
  }

  /**
   * Deletes `key`: true if a live entry was deleted.
   *
   * @example
   * await client.delete('report:status', { fence: lock })
   */
  async delete(key: string, options?: DeleteOptions): Promise<boolean> {
    checkUserKey(key)
    const o = checkOptions<DeleteOptions>(options)
    if (o.ifRevision === null) throw new InvalidArgumentError('ifRevision must be a revision for delete (null would mean "only if absent")')
    const checks = this.#conditions(key, o)
    this.#ctx.assertOpen()
    const r = await this.adapter.commit(checks, [{ type: 'delete', key }])
    if (!r.ok) throw this.#refusal('delete', key, r.failed, o.fence)
    return r.deleted.includes(key)
  }

  /**
   * Every live entry whose key starts with `prefix`, sorted by key. Read
   * through the store's pages one after another (not one snapshot: an entry
   * changed meanwhile may show its new state or be missed).
   *
   * @example
   * const tabs = await client.list('presence:')
   */
  async list(prefix: string): Promise<Entry[]> {
    checkPrefix(prefix)
    this.#ctx.assertOpen()
    const entries = await listAll(this.adapter, prefix)
    // Reserved entries (wait lines, shared holds, permits) sort first (U+0001) and are ours, not the user's.
    return entries.some((e) => isReservedKey(e.key)) ? entries.filter((e) => !isReservedKey(e.key)) : entries
  }

  /**
   * Watches `key` (or, with `prefix: true`, every key starting with it).
   *
   * @example
   * for await (const ev of client.watch('lock:', { prefix: true, signal })) console.log(ev)
   */
  watch(key: string, options?: WatchOptions): Watch {
    return new Watch(this.#ctx, key, options)
  }

  /**
   * An election at the key `name`, seen by this client as one candidate.
   *
   * @example
   * const election = client.election('leader:sync', { ttl: 5_000 })
   */
  election(name: string, options?: ElectionOptions): Election {
    this.#ctx.assertOpen()
    return new Election(this.#ctx, name, options)
  }

  /**
   * Releases every lock and lease this client holds, ends its watches and
   * closes the adapter. Calling it again is harmless.
   *
   * @example
   * await client.close()
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true
      for (const fn of this.#onClose) fn(new ClosedError())
      this.#onClose.clear()
      const open = [...this.#open]
      await Promise.allSettled(open.map((o) => o.close()))
      await this.adapter.close()
    })()
    return this.#closing
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  #conditions(key: string, o: { ifRevision?: number | null; fence?: Fence }): Check[] {
    const checks: Check[] = []
    if (o.ifRevision !== undefined) checks.push({ key, revision: checkRevision(o.ifRevision, 'ifRevision') })
    if (o.fence !== undefined) {
      const f = o.fence as Partial<Fence> | null
      if (typeof f !== 'object' || f === null || typeof f.key !== 'string' || typeof f.token !== 'number') {
        throw new InvalidArgumentError('fence must be a lock or lease (an object with key and token)')
      }
      checkUserKey(f.key, 'fence.key')
      checks.push(...fenceChecks(f as Fence))
    }
    return checks
  }

  #refusal(op: string, key: string, failed: Array<{ key: string; entry: Entry | undefined }>, fence: Fence | undefined): Error {
    // The key no longer carries the token: the hold (if the fence is one) is over, and learns it now.
    if (fence && fenceRefused(fence, failed)) {
      return new FencedError(`${op} ${JSON.stringify(key)} refused: the lock ${JSON.stringify(fence.key)} is no longer held with token ${fence.token}`)
    }
    return new ConflictError(`${op} ${JSON.stringify(key)} refused: the entry is not at the expected revision`)
  }
}

/** The events a client dispatches, typed (declaration merging onto the class above: no code). */
export interface Client {
  /** Calls `listener` with a {@link HoldEndEvent} when a hold of this client ends other than by its own release or close. */
  addEventListener(type: 'holdend', listener: ((event: HoldEndEvent) => void) | null, options?: boolean | AddEventListenerOptions): void
  /** Adds a listener, as `EventTarget` does. */
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void
  /** Removes a `holdend` listener. */
  removeEventListener(type: 'holdend', listener: ((event: HoldEndEvent) => void) | null, options?: boolean | EventListenerOptions): void
  /** Removes a listener, as `EventTarget` does. */
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void
}
