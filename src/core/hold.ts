/**
 * A hold is a TTL'd entry owned by this client: a {@link Lock} (no value) or
 * a {@link Lease} (a value). Both share this one implementation.
 *
 * Safety rules this module keeps:
 * - The fencing token is the entry's `created` revision and never changes
 *   while the hold lives. Renew and release check `created`, not `revision`,
 *   so a renewal whose answer was lost cannot fail the next one, and neither
 *   can touch an entry that another owner has taken since.
 * - The holder counts its TTL on its own monotonic clock from *before* it
 *   sent the request, minus a drift margin. When that deadline passes without
 *   a successful renewal, `signal` aborts — the store may still hold the
 *   entry a little longer, never the other way round.
 * - `signal` also aborts when a renewal finds the entry gone or replaced, and
 *   (once someone reads `signal`) when the store reports the entry changed hands.
 *
 * Not guaranteed: a holder that is paused (GC, a frozen tab, SIGSTOP) past its
 * deadline learns of the loss only when it runs again. Code that writes to a
 * shared resource must pass the token (`fence`) so the resource refuses a
 * stale holder; that is what tokens are for.
 *
 * @module
 */
import type { Unsubscribe, Value, WatchEvent } from './adapter'
import type { TimerHandle } from './clock'
import { driftMargin, type Context } from './context'
import { HoldEndedError } from './errors'
import { keepAlive } from './keep-alive'
import { checkTtl } from './validate'

/** How a hold starts: the entry its acquiring commit wrote, and when the request was sent. */
export interface HoldInit<V extends Value> {
  key: string
  value: V
  token: number
  revision: number
  ttl: number
  /** The clock reading taken before the acquiring request was sent. */
  sentAt: number
  autoRenew: boolean
}

/**
 * What a fenced write checks: a lock or lease key and the token it must still be held with.
 *
 * @example
 * await client.put('report', 'done', { fence: lock }) // a Lock is a Fence
 */
export interface Fence {
  /** The lock or lease key. */
  readonly key: string
  /** The fencing token the key must still be held with. */
  readonly token: number
}

/**
 * The shared machinery of locks and leases. Use {@link Lock} and {@link Lease}.
 *
 * @example
 * function stopWhenLost(hold: Hold) { hold.signal.addEventListener('abort', () => console.log(hold.signal.reason)) }
 */
export abstract class Hold<V extends Value = Value> implements AsyncDisposable, Fence {
  /** The key this hold owns. */
  readonly key: string
  /**
   * The fencing token: the revision that created the entry. Strictly larger
   * than every earlier token of the same store; the same across renewals.
   */
  readonly token: number
  /** The id of the client that holds it. */
  readonly owner: string

  readonly #ctx: Context
  readonly #value: V
  readonly #autoRenew: boolean
  #ttl: number
  #revision: number
  #deadline: number
  /** When the request behind the current deadline was sent. */
  #deadlineSentAt: number
  /** Made on first read of `signal`: most holds end without anyone listening. */
  #controller: AbortController | undefined
  /** Why the hold ended; built lazily, since an error captures a stack. */
  #reason: (() => HoldEndedError) | undefined
  #ended = false
  #deadlineTimer: TimerHandle | undefined
  #renewTimer: TimerHandle | undefined
  #watching = false
  #unwatch: Unsubscribe | undefined
  #finishing: Promise<boolean> | undefined
  readonly #letGo = keepAlive()

  /** @internal Created by `locks.acquire` and `leases.grant`. */
  constructor(ctx: Context, init: HoldInit<V>) {
    this.#ctx = ctx
    this.key = init.key
    this.token = init.token
    this.owner = ctx.id
    this.#value = init.value
    this.#ttl = init.ttl
    this.#revision = init.revision
    this.#autoRenew = init.autoRenew
    this.#deadline = init.sentAt + init.ttl - driftMargin(init.ttl)
    this.#deadlineSentAt = init.sentAt
    ctx.open.add(this)
    this.#arm()
  }

  /**
   * Aborts when the hold ends: released, expired, stolen, lost on renewal, or
   * the client closed. Its `reason` is a {@link HoldEndedError} whose `code` says which.
   */
  get signal(): AbortSignal {
    this.#observe()
    if (!this.#controller) {
      this.#controller = new AbortController()
      if (this.#reason) this.#controller.abort(this.#reason())
    }
    return this.#controller.signal
  }

  /** True while the holder's own deadline has not passed and nothing ended the hold. */
  get held(): boolean {
    this.#checkDeadline()
    return !this.#ended
  }

  /** Milliseconds until the holder's deadline (0 once ended). */
  get remaining(): number {
    this.#checkDeadline()
    return this.#ended ? 0 : Math.max(0, this.#deadline - this.#ctx.clock.now())
  }

  /** The TTL the hold renews with. */
  get ttl(): number {
    return this.#ttl
  }

  /** The revision of the last write of the entry this holder knows of. */
  get revision(): number {
    return this.#revision
  }

  /** @internal The value written with the entry. */
  protected get heldValue(): V {
    return this.#value
  }

  /**
   * Extends the hold to `ttl` ms (default: its TTL) from now. Resolves true,
   * or false when the hold was already lost; rejects when the store cannot be
   * reached (the hold then lasts until its deadline, and auto-renew retries).
   *
   * @example
   * if (!(await lock.renew(30_000))) return // lost: stop working
   */
  async renew(ttl: number = this.#ttl): Promise<boolean> {
    checkTtl(ttl)
    if (!this.held) return false
    const sentAt = this.#ctx.clock.now()
    const result = await this.#ctx.adapter.commit(
      [{ key: this.key, created: this.token }],
      [{ type: 'set', key: this.key, value: this.#value, ttl, owner: this.owner }],
    )
    if (!result.ok) {
      const entry = result.failed[0]?.entry
      this.#end(
        entry
          ? new HoldEndedError('STOLEN', `${this.#what()} was taken over by ${entry.owner ?? 'another writer'} (token ${entry.created})`)
          : new HoldEndedError('EXPIRED', `${this.#what()} had expired or was deleted when it was renewed`),
      )
      return false
    }
    if (this.#ended) {
      // The deadline passed (or a release began) while the renewal was in
      // flight: the holder was told it lost, so free the entry it just extended.
      void this.#deleteGuarded().catch(() => {})
      return false
    }
    this.#revision = Math.max(this.#revision, result.revision)
    // Of renewals answered out of order, the one sent last decides: whichever
    // the store applied last, it expires no earlier than that one's deadline.
    // (Taking the later deadline instead would be wrong after a shorter TTL.)
    if (sentAt >= this.#deadlineSentAt) {
      this.#ttl = ttl
      this.#deadlineSentAt = sentAt
      this.#deadline = sentAt + ttl - driftMargin(ttl)
      this.#arm()
    }
    return true
  }

  /** Ends the hold and deletes its entry if this holder still owns it; true if it was still held. */
  protected finish(reason: 'RELEASED' | 'CLOSED' = 'RELEASED'): Promise<boolean> {
    if (this.#finishing) return this.#finishing.then(() => false, () => false)
    const wasHeld = this.held
    this.#end(() => new HoldEndedError(reason, `${this.#what()} was ${reason === 'CLOSED' ? 'ended by client.close()' : 'released'}`))
    this.#finishing = this.#deleteGuarded().then(
      (deleted) => wasHeld && deleted,
      (err) => {
        if (wasHeld) throw err
        return false
      },
    )
    return this.#finishing
  }

  /** Releases the hold; `await using` calls this. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.finish()
  }

  /** @internal Called by `client.close()`. */
  close(): Promise<boolean> {
    return this.finish('CLOSED')
  }

  async #deleteGuarded(): Promise<boolean> {
    const r = await this.#ctx.adapter.commit([{ key: this.key, created: this.token }], [{ type: 'delete', key: this.key }])
    return r.ok
  }

  #what(): string {
    return `the hold on ${JSON.stringify(this.key)} (token ${this.token})`
  }

  #checkDeadline(): void {
    if (!this.#ended && this.#ctx.clock.now() >= this.#deadline) {
      this.#end(new HoldEndedError('EXPIRED', `${this.#what()} expired: its TTL passed without a successful renewal`))
    }
  }

  /** (Re)sets the deadline timer and, with auto-renew, the next renewal. */
  #arm(): void {
    const clock = this.#ctx.clock
    if (this.#deadlineTimer !== undefined) clock.clearTimeout(this.#deadlineTimer)
    this.#armDeadline()
    if (this.#autoRenew) this.#scheduleRenew(this.#ttl / 3)
  }

  /**
   * Timers may fire a little before the clock reaches their due time (Node
   * rounds to whole ms and uses the loop's cached time): if it is not due
   * yet, look again then, so the signal aborts at the deadline and not at
   * whatever reads `held` next.
   */
  #armDeadline(): void {
    const clock = this.#ctx.clock
    this.#deadlineTimer = clock.setTimeout(() => {
      this.#deadlineTimer = undefined
      this.#checkDeadline()
      if (!this.#ended) this.#armDeadline()
    }, this.#deadline - clock.now())
  }

  #scheduleRenew(delay: number): void {
    const clock = this.#ctx.clock
    if (this.#renewTimer !== undefined) clock.clearTimeout(this.#renewTimer)
    this.#renewTimer = clock.setTimeout(() => {
      this.#renewTimer = undefined
      this.renew().catch(() => {
        // Unreachable store: try again soon, until the deadline decides.
        if (!this.#ended) this.#scheduleRenew(Math.min(this.#ttl / 10, 1000))
      })
    }, delay)
  }

  /** Watches the entry so that a steal or deletion aborts `signal` without waiting for a renewal. */
  #observe(): void {
    if (this.#watching || this.#ended) return
    this.#watching = true
    const sink = {
      event: (ev: WatchEvent) => this.#onEvent(ev),
      error: () => {},
    }
    this.#ctx.adapter.watch(this.key, sink, this.#revision).then(
      (unwatch) => (this.#ended ? unwatch() : (this.#unwatch = unwatch)),
      () => {},
    )
  }

  #onEvent(ev: WatchEvent): void {
    if (ev.key !== this.key || ev.revision <= this.#revision || this.#ended) return
    if (ev.type === 'put' && ev.created === this.token) {
      this.#revision = ev.revision
      return
    }
    this.#end(
      ev.type === 'put'
        ? new HoldEndedError('STOLEN', `${this.#what()} was taken over by ${ev.owner ?? 'another writer'} (token ${ev.created})`)
        : ev.type === 'expire'
          ? new HoldEndedError('EXPIRED', `${this.#what()} expired in the store`)
          : new HoldEndedError('LOST', `${this.#what()} was deleted by another writer`),
    )
  }

  #end(reason: HoldEndedError | (() => HoldEndedError)): void {
    if (this.#ended) return
    this.#ended = true
    const clock = this.#ctx.clock
    if (this.#deadlineTimer !== undefined) clock.clearTimeout(this.#deadlineTimer)
    if (this.#renewTimer !== undefined) clock.clearTimeout(this.#renewTimer)
    this.#unwatch?.()
    this.#ctx.open.delete(this)
    this.#letGo()
    let made: HoldEndedError | undefined
    this.#reason = () => (made ??= typeof reason === 'function' ? reason() : reason)
    this.#controller?.abort(this.#reason())
  }
}

/**
 * A held lock: a TTL'd entry with no value, a fencing token and a signal.
 * Get one from `client.locks.acquire`.
 *
 * @example
 * const lock = await client.locks.acquire('lock:nightly-report', { ttl: 30_000 })
 * if (lock) {
 *   await using held = lock
 *   await client.put('report:status', 'done', { fence: held })
 * }
 */
export class Lock extends Hold<null> {
  /**
   * Releases the lock: true if it was still held. Releasing twice, or after
   * the lock was lost, is harmless and resolves false; it never removes a lock
   * another owner holds now.
   *
   * @example
   * await lock.release()
   */
  release(): Promise<boolean> {
    return this.finish()
  }
}

/**
 * A granted lease: a key with a value that lives while its owner renews it.
 * Get one from `client.leases.grant`.
 *
 * @example
 * const lease = await client.leases.grant('presence:tab-1', { ttl: 10_000, value: { name: 'tab 1' } })
 * lease?.signal.addEventListener('abort', () => console.log('gone'))
 */
export class Lease<V extends Value = Value> extends Hold<V> {
  /** The value the lease was granted with. */
  get value(): V {
    return this.heldValue
  }

  /**
   * Revokes the lease and deletes its key: true if it was still held.
   *
   * @example
   * await lease.revoke()
   */
  revoke(): Promise<boolean> {
    return this.finish()
  }
}
