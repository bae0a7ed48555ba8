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
 * - A hold is alive exactly while its key carries its token: by the store's
 *   new-life rule, any write that changes the key's owner (a steal, a plain
 *   put) or ends the entry (a delete, an expiry) leaves the key without it.
 *   The hold learns of that from whatever tells it first — a renewal's or
 *   release's refused check, a fenced write refused for its fence, an event
 *   of its key (once someone reads `signal`), or a look at the key when that
 *   watch fails — and ends at once: `held` turns false and `signal` aborts.
 * - The reason names what happened (see `./end`); a release or renewal
 *   whose check fails says what it found there, and resolves `false`.
 *
 * Not guaranteed: a holder that is paused (GC, a frozen tab, SIGSTOP) past its
 * deadline learns of the loss only when it runs again. Code that writes to a
 * shared resource must pass the token (`fence`) so the resource refuses a
 * stale holder; that is what tokens are for.
 *
 * @module
 */
import type { Check, CommitResult, Entry, Gate, Unsubscribe, Value, WatchEvent } from '../contract/adapter'
import type { TimerHandle } from '../time/clock'
import { driftMargin, type Context } from '../context'
import type { HoldEndedError } from '../contract/errors'
import { endAtDeadline, endByGate, endByHolder, endFromEntry, endFromEvent, holdName } from './end'
import { handOn } from './hand-on'
import { Life, type Failed, type Fence, type HoldLife } from './life'
import { keepAlive } from '../time/keep-alive'
import { checkTtl } from '../contract/validate'

/** How long a hold whose watch failed waits before it watches its key again. */
const REWATCH_MS = 1_000

export type { Fence } from './life'

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
  /** Where the hold lives, when not simply in the entry at `key`. */
  life?: HoldLife
  /** A lock's mode: a shared part says so; any other lock is exclusive. */
  mode?: LockMode
}

/** How a lock is held: alone (`exclusive`), or beside other `shared` holders (as the Web Locks API). */
export type LockMode = 'exclusive' | 'shared'

/**
 * How a write is fenced: `checks` are what a write fenced by `fence` sends
 * (a hold's life, or `{ key, created: token }`); `refused` tells the fence
 * that such a write was refused, with the failed checks, and says whether it
 * was refused for the fence (a hold then ends at once). Set by `Hold`'s
 * static block, since a hold's life is private to it.
 */
let fencing: { checks(fence: Fence): Check[]; refused(fence: Fence, failed: Failed): boolean }

/** Gives `hold` the gate its take was made through (capability `gates`): kept while it lives, let go when it ends. Set by `Hold`'s static block. */
let gating: (hold: Hold, gate: Gate) => void

/** Keeps `gate` with `hold` until the hold ends. @internal */
export function keepGate(hold: Hold, gate: Gate): void {
  gating(hold, gate)
}

/** The checks a write fenced by `fence` sends. @internal */
export function fenceChecks(fence: Fence): Check[] {
  return fencing.checks(fence)
}

/** A write fenced by `fence` was refused with `failed`: whether for the fence (a hold then ends at once). @internal */
export function fenceRefused(fence: Fence, failed: Failed): boolean {
  return fencing.refused(fence, failed)
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
  readonly #life: Life
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
  /** A release (or close) was asked for: no longer held; its answer decides the reason. */
  #releasing = false
  #deadlineTimer: TimerHandle | undefined
  #renewTimer: TimerHandle | undefined
  #rewatchTimer: TimerHandle | undefined
  #watching = false
  #unwatch: Unsubscribe | undefined
  #finishing: Promise<boolean> | undefined
  /** The gate the take was made through (capability `gates`), held while the hold lives. */
  #gate: Gate | undefined
  readonly #letGo = keepAlive()

  /** @internal Created by `locks.acquire` and `leases.grant`. */
  constructor(ctx: Context, init: HoldInit<V>) {
    this.#ctx = ctx
    this.key = init.key
    this.token = init.token
    this.owner = ctx.id
    this.#value = init.value
    this.#life = new Life(init.key, init.token, init.life)
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

  /** True while the holder's own deadline has not passed and nothing ended (or began to release) the hold. */
  get held(): boolean {
    this.#checkDeadline()
    return !this.#ended && !this.#releasing
  }

  /** Milliseconds until the holder's deadline (0 once ended). */
  get remaining(): number {
    return this.held ? Math.max(0, this.#deadline - this.#ctx.clock.now()) : 0
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
    const result = await this.#ctx.adapter.commit(this.#life.checks, [{ type: 'set', key: this.#life.entryKey, value: this.#value, ttl, owner: this.owner }])
    if (!result.ok) {
      // A release under way decides the reason from its own answer.
      if (!this.#releasing) this.#end(this.#reasonFrom(result.failed))
      return false
    }
    if (this.#releasing) return false
    if (this.#ended) {
      // The deadline passed while the renewal was in flight: the holder was
      // told it lost, so free the entry it just extended.
      void this.#free().catch(() => {})
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

  /**
   * Ends the hold and deletes its entry if it still carries this hold's
   * token: true if it was held until then. The signal aborts with the
   * answer: `RELEASED` (or `CLOSED`) once the store deleted it, or what the
   * store found instead (`STOLEN`, `LOST`, `EXPIRED`), resolving false.
   *
   * Every end a holder asks for comes here, by `this.finish` (release,
   * revoke, `await using`, a LockSet's release, an election's resign,
   * `client.close()`), as every renewal goes through `this.renew`:
   * zaris/otel wraps these two on each handle it sees, and the core carries
   * no hook for it.
   */
  protected finish(reason: 'RELEASED' | 'CLOSED' = 'RELEASED'): Promise<boolean> {
    if (this.#finishing) return this.#finishing.then(() => false, () => false)
    const wasHeld = this.held
    const released = () => endByHolder(this.#what(), reason)
    // No longer held from now on; the deadline and renewals no longer matter. (A hold
    // that was not held has ended: the end it had stays, and its timers are stopped.)
    this.#releasing = true
    this.#stopTimers()
    // Taken through a gate: the next in line takes the key over this entry (./hand-on). A delete
    // that finds such a successor's life there released the hold all the same.
    const gate = this.#gate
    // Only a hold alone at the gate's key is taken over so (shared holds, at keys of their own, leave their group in their own commit).
    const handing = gate && wasHeld && this.#life.entryKey === gate.key
    if (gate && !handing) gate.release()
    const free = () => (handing ? handOn(this.#ctx.adapter, this.#ctx.clock, gate, this.#life, this.#revision, () => this.#free()) : this.#free())
    this.#finishing = free().then(
      (r) => {
        const ok = r === undefined || r.ok || (gate !== undefined && wasHeld && this.#handedOn(r.failed))
        this.#end(ok ? released : this.#reasonFrom(r!.failed))
        return wasHeld && ok
      },
      (err) => {
        if (!wasHeld) return false
        // Unknown whether the store deleted it; the holder let it go either way.
        this.#end(released)
        throw err
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

  /**
   * Deletes the entry if it still carries this hold, and tidies what a
   * release tidies (the last shared holder out ends its group) before it resolves.
   */
  async #free(): Promise<CommitResult> {
    const r = await this.#ctx.adapter.commit(this.#life.checks, this.#life.releaseOps())
    // A tidy-up (a shared hold's) is awaited; most releases have none, and skip that hop.
    const tidying = r.ok ? this.#life.released(r.entries) : undefined
    if (tidying) await tidying
    return r
  }

  #what(): string {
    return holdName(this.key, this.token)
  }

  /** Whether a release's delete failed only because the next holder of the gate took the key over already: an owned, later life. */
  #handedOn(failed: Failed): boolean {
    const e = this.#life.gone(failed)?.entry
    return e?.owner !== undefined && e.created > this.token
  }

  /** Why the hold is over, from what the store has instead at the first of its failed checks. */
  #reasonFrom(failed: Failed): HoldEndedError {
    // An expiry comes at the holder's deadline or after it, since the holder counts from before its request.
    // Every failed check of the hold's own commits is one of its life's, so `gone` finds one.
    return endFromEntry(this.#what(), this.#life.gone(failed)?.entry, this.#ctx.clock.now() >= this.#deadline)
  }

  /** A write fenced by this hold was refused: if for the fence, the hold is over. */
  #fenceRefused(failed: Failed): boolean {
    const gone = this.#life.gone(failed)
    if (gone && !this.#ended && !this.#releasing) this.#end(this.#reasonFrom([gone]))
    return gone !== undefined
  }

  static {
    gating = (hold, gate) => {
      if (hold.#ended || hold.#releasing) return gate.release()
      hold.#gate = gate
      // A gate let go (by a release, or the end) is never lost; the first end stays.
      gate.onLost(() => hold.#end(endByGate(hold.#what())))
    }
    fencing = {
      refused: (fence, failed) => (fence instanceof Hold ? fence.#fenceRefused(failed) : failed.some((f) => f.key === fence.key)),
      checks: (fence) => (fence instanceof Hold ? fence.#life.checks : [{ key: fence.key, created: fence.token }]),
    }
  }

  #checkDeadline(): void {
    if (!this.#ended && !this.#releasing && this.#ctx.clock.now() >= this.#deadline) {
      this.#end(endAtDeadline(this.#what()))
    }
  }

  /**
   * (Re)sets the deadline timer and, with auto-renew, the next renewal: a
   * third of the TTL after the request that set the deadline was sent, not
   * after its answer came, so a slow store (a loaded node, a long round trip)
   * does not stretch every renewal period by its round trip.
   */
  #arm(): void {
    const clock = this.#ctx.clock
    this.#cancel(this.#deadlineTimer)
    this.#armDeadline()
    if (this.#autoRenew) this.#scheduleRenew(this.#deadlineSentAt + this.#ttl / 3 - clock.now())
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
    this.#cancel(this.#renewTimer)
    this.#renewTimer = clock.setTimeout(() => {
      this.#renewTimer = undefined
      this.renew().catch(() => {
        // Unreachable store: try again soon, until the deadline decides.
        if (!this.#ended && !this.#releasing) this.#scheduleRenew(Math.min(this.#ttl / 10, 1000))
      })
    }, delay)
  }

  /** Watches the entry so that a steal or deletion aborts `signal` without waiting for a renewal. */
  #observe(): void {
    if (this.#watching || this.#ended || this.#releasing) return
    this.#watching = true
    // If the watch ends (history gone, a store that was reset, no connection): look at the key instead.
    this.#unwatch = this.#life.watch(this.#ctx.adapter, this.#revision, (ev) => this.#onEvent(ev), () => {
      this.#unwatch = undefined
      void this.#look()
    })
  }

  /** Reads the key: ends the hold if the key no longer carries its token, else watches it again a little later. */
  async #look(): Promise<void> {
    let read: Array<{ key: string; entry: Entry | undefined }> | undefined
    try {
      read = await Promise.all(this.#life.keys.map(async (key) => ({ key, entry: await this.#ctx.adapter.get(key) })))
    } catch {
      // Unreachable: the deadline still decides, and we look again below.
    }
    if (this.#ended || this.#releasing) return
    const gone = read && this.#life.gone(read)
    if (gone) return this.#end(this.#reasonFrom([gone]))
    if (read) this.#revision = Math.max(this.#revision, read[0]!.entry!.revision)
    this.#rewatchTimer = this.#ctx.clock.setTimeout(() => {
      this.#rewatchTimer = undefined
      this.#watching = false
      this.#observe()
    }, REWATCH_MS)
  }

  #onEvent(ev: WatchEvent): void {
    if (ev.revision <= this.#revision || this.#ended || this.#releasing) return
    const verdict = this.#life.judge(ev)
    if (verdict === 'renewed') this.#revision = ev.revision
    if (verdict === 'ended') this.#end(endFromEvent(this.#what(), ev))
  }

  #stopTimers(): void {
    this.#cancel(this.#deadlineTimer)
    this.#cancel(this.#renewTimer)
    this.#cancel(this.#rewatchTimer)
    this.#deadlineTimer = this.#renewTimer = this.#rewatchTimer = undefined
  }

  #cancel(timer: TimerHandle | undefined): void {
    if (timer !== undefined) this.#ctx.clock.clearTimeout(timer)
  }

  /** Ends the hold for `reason`: a function (built lazily) when its holder ended it, else what ended it. */
  #end(reason: HoldEndedError | (() => HoldEndedError)): void {
    if (this.#ended) return
    this.#ended = true
    this.#gate?.release()
    this.#stopTimers()
    this.#unwatch?.()
    this.#ctx.open.delete(this)
    this.#letGo()
    let made: HoldEndedError | undefined
    this.#reason = () => (made ??= typeof reason === 'function' ? reason() : reason)
    this.#controller?.abort(this.#reason())
    // Ended other than by its holder (whose end is a function, built only if asked for): the client's `holdend` event.
    if (typeof reason != 'function') this.#ctx.lost({ key: this.key, token: this.token, reason })
  }
}
