/**
 * `client.election(name)`: leader election on a lock. The leader is whoever
 * holds the lease at `name`, whose value names the candidate; campaigning is
 * waiting to acquire it, resigning is releasing it, and a leader that stops
 * renewing (a crashed process, a closed tab) loses it at its TTL — at once,
 * where the adapter can tell that its client is gone.
 *
 * The leader's fencing token comes with leadership: pass it (`fence`) to
 * writes that only the leader may make, so a deposed leader that has not yet
 * noticed cannot make them.
 *
 * Events (an `EventTarget`): `elected` when this candidate becomes leader,
 * `deposed` when it stops being leader, `leader` (a `CustomEvent` whose
 * `detail` is the new {@link Leader} or `undefined`) on every change seen.
 *
 * One truth per candidate: `leader`, the `leader` event and `observe()`
 * never name this candidate while its `isLeader` is false. The winner's own
 * write can reach its watch before its campaign has learned that it won;
 * that news waits for the campaign, which sets the term first and then tells.
 * When the term ends (resigned, or its deadline passed) the candidate stops
 * naming itself at once, though the store may hold its entry a moment longer.
 *
 * @module
 */
import type { Value, WatchEvent } from './adapter'
import { acquire } from './acquire'
import type { Context } from './context'
import { ClosedError, InvalidArgumentError, isZarisError } from './errors'
import { Hold, Lease } from './hold'
import { checkUserKey, checkOptions, checkSignal, checkTtl } from './validate'
import { Watch } from './watch'

/** Options of `client.election`. */
export interface ElectionOptions {
  /** The leader's lease TTL in ms: how long a crashed leader can block. Default: the client's `ttl`. */
  ttl?: number
  /** How this candidate is shown to others. Default: the client's id. */
  candidate?: string
}

/** The current leader of an election. */
export interface Leader {
  /** The candidate name of the leader. */
  candidate: string
  /** The leader's fencing token: it rises with every new term. */
  token: number
}

/**
 * One election, seen from one candidate.
 *
 * @example
 * const election = client.election('leader:sync', { ttl: 5_000, candidate: 'tab-1' })
 * election.addEventListener('elected', () => startSync())
 * await election.campaign()
 */
export class Election extends EventTarget implements AsyncDisposable {
  /** The key the leader's lease lives at. */
  readonly name: string
  /** This candidate's name. */
  readonly candidate: string

  readonly #ctx: Context
  readonly #ttl: number
  #term: Lease<{ candidate: string }> | undefined
  #campaign: Promise<Lease<{ candidate: string }> | null> | undefined
  /** Aborted by `close()`: ends a campaign under way (it resolves `null`). */
  readonly #closer = new AbortController()
  #leader: Leader | undefined
  #observer: Watch | undefined
  #revision = 0
  /** This client's own write, seen while this candidate's campaign was under way: told once the campaign settles. */
  #early: { leader: Leader; revision: number } | undefined
  /** The lease this candidate's last campaign won, from the moment it was won (before the campaign resolves). */
  #won: Lease<{ candidate: string }> | undefined

  /** @internal Created by `client.election`. */
  constructor(ctx: Context, name: string, rawOptions?: ElectionOptions) {
    super()
    const options = checkOptions<ElectionOptions>(rawOptions)
    this.name = checkUserKey(name, 'name')
    this.#ttl = options.ttl === undefined ? ctx.ttl : checkTtl(options.ttl)
    if (options.candidate !== undefined && (typeof options.candidate !== 'string' || options.candidate === '')) {
      throw new InvalidArgumentError('candidate must be a non-empty string')
    }
    this.candidate = options.candidate ?? ctx.id
    this.#ctx = ctx
  }

  /** True while this candidate leads (its term has not ended by its own deadline). */
  get isLeader(): boolean {
    return this.#term?.held ?? false
  }

  /** The leader as last seen by this candidate, or `undefined`. Kept current once `campaign` or `observe` ran. */
  get leader(): Leader | undefined {
    return this.#leader
  }

  /**
   * The current term's fencing token while this candidate leads.
   *
   * @example
   * await client.put('sync:cursor', 42, { fence: election.term! })
   */
  get term(): Lease<{ candidate: string }> | undefined {
    return this.#term?.held ? this.#term : undefined
  }

  /**
   * Resolves when this candidate leads, with its term (a lease whose `signal`
   * aborts when leadership ends). Calling it while leading resolves at once.
   * Resolves `null` when the campaign ends without leadership because the
   * client or this election was closed (as an acquire that did not get the
   * lock resolves `null`), so a campaign nobody awaits never becomes an
   * unhandled rejection on `client.close()`. Rejects with `signal.reason`
   * when your signal aborts it, and with the store's error when the store
   * fails (unreachable, refused).
   *
   * @example
   * const term = await election.campaign({ signal: AbortSignal.timeout(60_000) })
   * if (term) term.signal.addEventListener('abort', stopSync)
   */
  async campaign(options?: { signal?: AbortSignal }): Promise<Lease<{ candidate: string }> | null> {
    const signal = checkSignal(checkOptions<{ signal: AbortSignal }>(options).signal)
    if (this.#term?.held) return this.#term
    if (this.#campaign) return this.#campaign
    if (this.#closer.signal.aborted) return null
    try {
      this.#ctx.assertOpen()
    } catch {
      return null // a closed client campaigns no more
    }
    this.#startObserving()
    const either = anyOf(signal, this.#closer.signal)
    this.#campaign = acquire(
      this.#ctx,
      this.name,
      { candidate: this.candidate },
      { ttl: this.#ttl, wait: Infinity, signal: either.signal, autoRenew: true },
      (init) => (this.#won = new Lease(this.#ctx, init)),
    ).then(
      (term) => {
        either.dispose()
        this.#campaign = undefined
        const lease = term!
        this.#term = lease
        this.#setLeader({ candidate: this.candidate, token: lease.token }, lease.revision)
        this.dispatchEvent(new Event('elected'))
        const deposed = () => {
          if (this.#term === lease) this.#term = undefined
          this.#termEnded(lease.token)
          this.dispatchEvent(new Event('deposed'))
        }
        // A term won by a commit answered after its TTL has already ended: no abort is to come.
        if (lease.signal.aborted) deposed()
        else lease.signal.addEventListener('abort', deposed, { once: true })
        return lease
      },
      (err) => {
        either.dispose()
        this.#campaign = undefined
        // Closed (the client, its adapter, or this election): the campaign is over, without a term.
        if (isZarisError(err, 'CLOSED') && !signal?.aborted) return null
        throw err
      },
    )
    return this.#campaign
  }

  /**
   * Gives up leadership (if held) so another candidate can take over at once.
   * Resolves true if this candidate was leading.
   *
   * @example
   * await election.resign()
   */
  async resign(): Promise<boolean> {
    const term = this.#term
    this.#term = undefined
    if (term) this.#termEnded(term.token)
    return term ? term.revoke() : false
  }

  /**
   * Every change of leader, starting with the current one (`undefined` while
   * nobody leads). Ends when `signal` aborts or the client closes.
   *
   * @example
   * for await (const leader of election.observe()) console.log('leader:', leader?.candidate)
   */
  async *observe(options?: { signal?: AbortSignal }): AsyncGenerator<Leader | undefined> {
    const signal = checkSignal(checkOptions<{ signal: AbortSignal }>(options).signal)
    const watch = new Watch(this.#ctx, this.name, { signal })
    try {
      await watch.ready
      const entry = await this.#ctx.adapter.get(this.name)
      let last = entry ? await this.#vouch(leaderOf(entry.value, entry.created), entry.owner === this.#ctx.id) : undefined
      let seen = entry?.revision ?? 0
      if (entry) this.#setLeader(last, entry.revision)
      yield last
      for await (const ev of watch) {
        if (ev.revision <= seen) continue
        seen = ev.revision
        const next = await this.#vouch(ev.type === 'put' ? leaderOf(ev.value, ev.created!) : undefined, ev.type === 'put' && ev.owner === this.#ctx.id)
        if (next?.token === last?.token && next?.candidate === last?.candidate) continue
        last = next
        yield next
      }
    } finally {
      watch.close()
    }
  }

  /** Ends a campaign under way (it resolves `null`), resigns and stops observing. */
  async close(): Promise<void> {
    this.#closer.abort(new ClosedError('the election was closed'))
    this.#observer?.close()
    this.#observer = undefined
    await this.resign()
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  /** Keeps `leader` current and fires `leader` events, from the first campaign on. */
  #startObserving(): void {
    if (this.#observer) return
    const watch = (this.#observer = new Watch(this.#ctx, this.name))
    void (async () => {
      try {
        await watch.ready
        const entry = await this.#ctx.adapter.get(this.name)
        if (entry) this.#see(leaderOf(entry.value, entry.created), entry.revision, entry.owner === this.#ctx.id)
        for await (const ev of watch) this.#onEvent(ev)
      } catch {
        // The client closed or the store went away; `leader` simply stops changing.
      }
    })()
  }

  #onEvent(ev: WatchEvent): void {
    this.#see(ev.type === 'put' ? leaderOf(ev.value, ev.created!) : undefined, ev.revision, ev.type === 'put' && ev.owner === this.#ctx.id)
  }

  /** Tells `leader` (written by this client when `mine`), or keeps it until the campaign under way settles. */
  #see(leader: Leader | undefined, revision: number, mine: boolean): void {
    const judged = this.#judge(leader, mine)
    if (judged !== LATER) return this.#setLeader(judged, revision)
    const waiting = this.#early !== undefined
    if (!this.#early || revision > this.#early.revision) this.#early = { leader: leader!, revision }
    if (waiting) return
    const flush = () => {
      const early = this.#early
      this.#early = undefined
      if (early) this.#see(early.leader, early.revision, true)
    }
    // Runs after the campaign's own continuation: the term is set by then.
    void this.#campaign!.then(flush, flush)
  }

  /** {@link #judge}, waiting for the campaign under way where it must. */
  async #vouch(leader: Leader | undefined, mine: boolean): Promise<Leader | undefined> {
    for (;;) {
      const judged = this.#judge(leader, mine)
      if (judged !== LATER) return judged
      await this.#campaign!.catch(() => {})
    }
  }

  /**
   * What this candidate may say of `leader`: an entry this client wrote
   * (`mine`) names this candidate only while it holds that term; held by
   * another object of this client (a second election on the name), it is true
   * as it stands; seen while a campaign is under way, it may be that
   * campaign's win, not yet known: {@link LATER}. Else (a term that ended,
   * still in the store) nobody this candidate can vouch for leads.
   */
  #judge(leader: Leader | undefined, mine: boolean): Leader | undefined | typeof LATER {
    if (!leader || !mine) return leader
    const term = this.#term
    if (term?.token === leader.token) return term.held ? leader : undefined
    for (const open of this.#ctx.open) if (open instanceof Hold && open !== term && open !== this.#won && open.key === this.name && open.token === leader.token) return leader
    return this.#campaign ? LATER : undefined
  }

  /** The term with `token` ended: stop naming this candidate leader (its entry may outlive it a moment). */
  #termEnded(token: number): void {
    if (this.#leader?.token !== token || this.#leader.candidate !== this.candidate) return
    this.#leader = undefined
    this.dispatchEvent(new CustomEvent('leader', { detail: undefined }))
  }

  #setLeader(leader: Leader | undefined, revision: number): void {
    if (revision < this.#revision) return
    // A term that ended before the campaign could tell it (the client closed meanwhile) names nobody.
    const term = this.#term
    if (leader && term?.token === leader.token && !term.held) leader = undefined
    this.#revision = revision
    const before = this.#leader
    if (before?.token === leader?.token && before?.candidate === leader?.candidate) return
    this.#leader = leader
    this.dispatchEvent(new CustomEvent('leader', { detail: leader }))
  }
}

/** "Not yet": the news waits for the campaign under way. */
const LATER = Symbol('later')

function leaderOf(value: Value | undefined, created: number): Leader | undefined {
  const candidate = typeof value === 'object' && value !== null && !Array.isArray(value) ? value.candidate : undefined
  return typeof candidate === 'string' ? { candidate, token: created } : undefined
}

/** A signal that aborts when either does, with that one's reason, and the function that detaches it (AbortSignal.any is newer than Node 20.0). */
function anyOf(a: AbortSignal | undefined, b: AbortSignal): { signal: AbortSignal; dispose(): void } {
  if (!a) return { signal: b, dispose() {} }
  const both = new AbortController()
  const onA = () => both.abort(a.reason)
  const onB = () => both.abort(b.reason)
  const dispose = () => {
    a.removeEventListener('abort', onA)
    b.removeEventListener('abort', onB)
  }
  if (a.aborted) onA()
  else if (b.aborted) onB()
  else {
    a.addEventListener('abort', onA, { once: true })
    b.addEventListener('abort', onB, { once: true })
  }
  return { signal: both.signal, dispose }
}
