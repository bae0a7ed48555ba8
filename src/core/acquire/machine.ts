/**
 * The wait of an acquire, as an explicit state machine. A {@link Claim}
 * (claim.ts) says what a try writes and what stands in its way; this machine
 * says when to try, where to stand in line, and what to wait for.
 *
 * Waiters stand in line (line.ts): only the first in line tries when
 * what blocks it changes, so a release costs one try, not one per waiter.
 * The line is advisory; the claim's compare-and-set alone decides who holds.
 *
 * States, and the transitions out of each (→ next state: when):
 *
 *   open      one try before the line (a plain try never queues)
 *             → won: it took · → open: the blocker vanished meanwhile
 *             → join: `inLine`, and someone already waits in line (no try)
 *             → steal: held, `steal` asked · → gave-up: held, no wait
 *             → join / watch: held (watch when there is no line)
 *   steal     a try over whoever holds it
 *             → won · → open: it changed before we could take it over
 *   join      take a place in line (or ask again who is ahead); meanwhile an
 *             *early watch* on the blocker, so joining does not delay a
 *             handover when we turn out to be first
 *             → behind: someone is ahead · → woke: the blocker changed first
 *             → watch: we are first, something blocks · → try: first, free
 *   behind    wait for the waiter ahead to leave the line, at most PATROL ms
 *             → join: it left or changed (evicted first if its client is gone)
 *             → patrol: PATROL passed (it may have died in line), or the wait ran out
 *   patrol    look at the claim while someone (maybe dead) is ahead
 *             → join: something blocks · → try: free, after HANDOVER_GRACE
 *             (the try fails if the waiter ahead took it meanwhile)
 *   try       one commit that takes the claim and leaves the line
 *             → won · → join / watch / try: what blocks now (join when the
 *             place was lost: rejoin at the back)
 *   watch     wait for what blocks to change (event, its TTL, its owner gone)
 *             → woke · → park: first in line, placed, blocked only at keys
 *             the take checks, and the adapter has `commitOnChange`
 *   queue     (capability `keepParked`, blocked only at keys the take
 *             checks, from any state that routes) take a place in line
 *             without asking who is ahead, and park at once: the store
 *             tries parked takes in the order they came, so the line's
 *             order is the store's, and a waiter costs no list, no watch and
 *             no message until its take goes through. A store that hands
 *             over (memory, a node) grants it in the release's own step.
 *             → park
 *   park      the take sent as a commit that waits at the store for a change
 *             at its checked keys and is tried there once more (one hop and
 *             one commit less per handover than watch, then try); with
 *             `keepParked`, until it goes through or its place is gone
 *             → won · → join / watch / try / queue: what blocks now · → woke: the
 *             answer shows nothing changed (the store's wait ran out, or it
 *             ignored the wait): an ordinary watch for that round, no loop;
 *             → queue: a `keepParked` wait that ran out: park again.
 *             The caller's signal or the client's close while parked: leave
 *             the line (the place is a check, so the parked try fails at
 *             once), await the answer, release a hold it won, give up.
 *   woke      act on what ended the wait
 *             → takeover: a blocker's client is gone · → look: unknown change
 *             → join / watch / try: an event says what blocks now
 *             → gave-up: the time ran out (via the deadline check)
 *   look      read what blocks → join / watch / try
 *   takeover  a try over the dead owner's entries (only the very ones seen)
 *             → won · → join / watch / try
 *   won, gave-up   the end: the hold, or `null`
 *
 * Before every state but open and steal: the caller's signal, the client's
 * close and the wait's deadline are checked (→ gave-up when it passed).
 *
 * @module
 */
import type { Entry } from '../contract/adapter'
import type { Claim } from './claim'
import type { Context } from '../context'
import { sightOf, waitForChange, type Sight, type Wake } from './wait'
import { WaitQueue } from './line'
import { awaitParked, sameBlockers } from './parked-take'

/** How often a waiter behind others looks at the claim itself, in ms (the waiter ahead may be dead). */
export const PATROL = 1_000

/**
 * How long, in ms, a patrol that finds the claim free waits for the waiter
 * ahead before trying over it. A live first in line takes a free claim
 * moments after the release; a patrol that tried at once would now and then
 * land in that gap and jump the line. One that stays free this long has
 * nobody alive in line to take it.
 */
export const HANDOVER_GRACE = 500

/** The longest a take waits at the store, in ms; the store may cut it shorter. */
export const PARK_MAX = 30_000
/** A wait at the store shorter than this is not worth it: watch instead. */
const PARK_MIN = 20
/** A parked take answered unchanged after this share of its wait: the store's wait ran out (sooner: it did not wait). */
const PARK_FULL = 0.9

/** A wait on nothing: only the time, the caller's signal or the client's close end it. */
const NOTHING: Sight = { blockers: [], watches: [] }

const EARLY: unique symbol = Symbol('early')
/** Why an early watch is dropped; made once (an abort without a reason makes a DOMException each time). */
const DROPPED = new Error('the early watch was dropped')

/** A state of the machine; see the module doc. */
export type State<H> =
  | { readonly name: 'open' }
  | { readonly name: 'steal'; readonly sight: Sight }
  | { readonly name: 'join'; readonly sight: Sight | undefined }
  | { readonly name: 'behind'; readonly ahead: Entry }
  | { readonly name: 'patrol' }
  | { readonly name: 'try' }
  | { readonly name: 'queue'; readonly sight: Sight }
  | { readonly name: 'watch'; readonly sight: Sight }
  | { readonly name: 'park'; readonly sight: Sight; readonly ms: number }
  | { readonly name: 'woke'; readonly wake: Wake; readonly sight: Sight }
  | { readonly name: 'look' }
  | { readonly name: 'takeover'; readonly sight: Sight; readonly owner: string }
  | { readonly name: 'won'; readonly hold: H }
  | { readonly name: 'gave-up' }

/** How long to wait, and for whom. */
export interface MachineOptions {
  /** Ms to keep waiting after the first try; 0 for one try. */
  wait: number
  signal?: AbortSignal
  steal?: boolean
  /**
   * Respect the line: `open` tries only when nobody waits in line, else it
   * joins (or gives up, with no time to wait) — the Web Locks API's grant
   * order. A steal goes ahead regardless, as the API's does. `onQueued` is
   * called once when the wait begins: our place in line is written (without
   * a line: we begin to watch).
   */
  inLine?: { onQueued?: () => void }
}

/** A watch on the blocker begun while joining the line. */
interface Early {
  sight: Sight
  promise: Promise<Wake>
  cancel: AbortController
}

/** One acquire's wait. `run()` it once; `step()` is the single transition (for tests). */
export class AcquireMachine<H> {
  readonly #ctx: Context
  readonly #claim: Claim<H>
  readonly #signal: AbortSignal | undefined
  readonly #steal: boolean
  readonly #inLine: boolean
  #onQueued: (() => void) | undefined
  readonly #until: number
  /** Our place in line, made when first needed (most acquires never wait); `null` before. */
  #queue: WaitQueue | undefined | null = null
  /** Nobody is ahead of us in line (or the claim has no line). */
  #first: boolean
  #early: Early | undefined

  constructor(ctx: Context, claim: Claim<H>, options: MachineOptions) {
    this.#ctx = ctx
    this.#claim = claim
    this.#signal = options.signal
    this.#steal = options.steal ?? false
    this.#inLine = !!options.inLine
    this.#onQueued = options.inLine?.onQueued
    this.#until = ctx.clock.now() + options.wait
    this.#first = claim.lineKey === undefined || !WaitQueue.fits(ctx, claim.lineKey)
  }

  /** Whether nobody stands ahead of us in line, as far as we know. */
  get first(): boolean {
    return this.#first
  }

  /** Our place in line, if we have one. */
  get line(): WaitQueue | undefined {
    return this.#line
  }

  get #line(): WaitQueue | undefined {
    if (this.#queue === null) {
      const key = this.#claim.lineKey
      this.#queue = key === undefined ? undefined : WaitQueue.for(this.#ctx, key, this.#claim.lineValue)
    }
    return this.#queue
  }

  /** Runs from `open` to the end: the hold, or `null` when the wait ran out. */
  async run(): Promise<H | null> {
    let state: State<H>
    try {
      // The first step without step()'s async hop: most acquires end here.
      this.#signal?.throwIfAborted()
      this.#ctx.assertOpen()
      const contended = this.#contended()
      state = contended ? { name: 'queue', sight: contended } : await this.#open()
      while (state.name !== 'won' && state.name !== 'gave-up') state = await this.step(state)
      return state.name === 'won' ? state.hold : null
    } finally {
      this.stop()
    }
  }

  /** Ends whatever the wait left running: the early watch, the place in line, the claim's own entries. */
  stop(): void {
    this.#dropEarly()
    this.#queue?.leave()
    this.#claim.leave()
  }

  /** One transition. */
  async step(state: State<H>): Promise<State<H>> {
    if (state.name === 'won' || state.name === 'gave-up') return state
    this.#signal?.throwIfAborted()
    this.#ctx.assertOpen()
    if (state.name === 'open') return this.#open()
    if (state.name === 'steal') return this.#stealOver(state.sight)
    if (this.#left() <= 0) return { name: 'gave-up' }
    switch (state.name) {
      case 'join':
        return this.#join(state.sight)
      case 'behind':
        return this.#behind(state.ahead)
      case 'patrol':
        return this.#patrol()
      case 'try': {
        this.#dropEarly()
        const place = this.#line?.entry
        return this.#tried(await this.#claim.attempt(undefined, { place, first: this.#first }), place)
      }
      case 'queue':
        return this.#enqueue(state.sight)
      case 'watch':
        return this.#watch(state.sight)
      case 'park':
        return this.#park(state.sight, state.ms)
      case 'woke':
        return this.#woke(state.wake, state.sight)
      case 'look':
        return this.#route(await this.#claim.look())
      case 'takeover': {
        const place = this.#line?.entry
        return this.#tried(await this.#claim.attempt(state.sight, { place, first: this.#first, over: { sight: state.sight, owner: state.owner } }), place)
      }
    }
  }

  #left(): number {
    return this.#until - this.#ctx.clock.now()
  }

  async #open(): Promise<State<H>> {
    if (this.#inLine && !this.#steal && (await this.#line?.occupied())) {
      return this.#left() <= 0 ? { name: 'gave-up' } : { name: 'join', sight: undefined }
    }
    const r = await this.#claim.attempt(undefined, {})
    if ('hold' in r) return { name: 'won', hold: r.hold }
    if (!r.sight) return { name: 'open' } // it vanished between the check and now: try again at once
    if (this.#steal) return { name: 'steal', sight: r.sight }
    if (this.#left() <= 0) return { name: 'gave-up' }
    return this.#route(r.sight)
  }

  async #stealOver(sight: Sight): Promise<State<H>> {
    const r = await this.#claim.attempt(sight, { over: { sight } })
    return 'hold' in r ? { name: 'won', hold: r.hold } : { name: 'open' }
  }

  /**
   * Where to go with what blocks now: park in line where the store keeps
   * parked takes in order; else stand in line until first, then wait on it,
   * or try when nothing does.
   */
  #route(sight: Sight | undefined): State<H> {
    if (sight && this.#parksInLine(sight)) return { name: 'queue', sight }
    if (!this.#first) return { name: 'join', sight }
    return sight ? { name: 'watch', sight } : { name: 'try' }
  }

  /** Whether the take waits at the store for success, right after joining the line (see `queue` in the module doc). */
  #parksInLine(sight: Sight): boolean {
    return this.#ctx.adapter.capabilities?.keepParked === true && this.#line !== undefined && this.#parkMs(sight) > 0
  }

  /** A key this client lately waited in line for, with what blocked it: join the line at once (see CONTENDED_MS in line.ts). */
  #contended(): Sight | undefined {
    const key = this.#claim.lineKey
    if (this.#inLine || this.#steal || key === undefined || this.#left() <= 0 || this.#ctx.adapter.capabilities?.keepParked !== true) return undefined
    const sight = WaitQueue.contended(this.#ctx, key)
    return sight && this.#parksInLine(sight) ? sight : undefined
  }

  async #enqueue(sight: Sight): Promise<State<H>> {
    this.#dropEarly()
    WaitQueue.waited(this.#ctx, this.#claim.lineKey!, sight)
    if (!(await this.#line!.place())) return { name: 'look' }
    this.#queued()
    const ms = this.#parkMs(sight)
    return ms > 0 ? { name: 'park', sight, ms } : { name: 'watch', sight }
  }

  async #join(sight: Sight | undefined): Promise<State<H>> {
    const line = this.#line!
    if (sight && !this.#early && !line.placed) this.#early = this.#startEarly(sight)
    const early = this.#early
    const placing = line.ahead()
    placing.then(() => this.#queued(), () => {})
    const raced = early ? await Promise.race([placing, early.promise.then((): typeof EARLY => EARLY)]) : await placing
    if (raced === EARLY) {
      // What blocks us changed before we knew our place: act on it now, as the
      // first in line would (at worst one extra try, never a second holder).
      placing.catch(() => {})
      this.#early = undefined
      return { name: 'woke', wake: await early!.promise, sight: early!.sight }
    }
    if (raced) {
      this.#dropEarly()
      return { name: 'behind', ahead: raced }
    }
    // First in line. The waiter ahead just left, most often by taking the claim: look before trying.
    this.#first = true
    const now = sight ?? (await this.#claim.look())
    if (now) await this.#claim.becameFirst?.()
    return this.#route(now)
  }

  async #behind(ahead: Entry): Promise<State<H>> {
    // The patrol covers a waiter that died in line on a store that cannot tell us.
    const wake = await waitForChange(this.#ctx, sightOf(ahead), Math.min(this.#left(), PATROL), this.#signal)
    if (wake.kind === 'owner-gone') await this.#line!.evict(ahead)
    // A timeout at the wait's deadline goes to patrol too: the deadline check before it gives up.
    return wake.kind === 'timeout' ? { name: 'patrol' } : { name: 'join', sight: undefined }
  }

  async #patrol(): Promise<State<H>> {
    const sight = await this.#claim.look()
    if (sight) return { name: 'join', sight }
    // Free, though someone (maybe dead) stands ahead: it may be taking the claim right now.
    // A plain pause, no watch: the try after it fails if the waiter ahead took the claim meanwhile.
    await waitForChange(this.#ctx, NOTHING, Math.min(this.#left(), HANDOVER_GRACE), this.#signal)
    return { name: 'try' }
  }

  async #watch(sight: Sight): Promise<State<H>> {
    this.#queued()
    const ms = this.#parkFor(sight)
    if (ms > 0) {
      this.#dropEarly()
      return { name: 'park', sight, ms }
    }
    const early = this.#early
    this.#early = undefined
    if (early && early.sight !== sight) early.cancel.abort(DROPPED)
    const wake = early?.sight === sight ? await early.promise : await waitForChange(this.#ctx, sight, this.#left(), this.#signal)
    return { name: 'woke', wake, sight }
  }

  /** How long our take may wait at the store for `sight` to change (0: watch instead); see `park` in the module doc. */
  #parkFor(sight: Sight): number {
    if (!this.#first || !this.#line?.entry || !this.#ctx.adapter.capabilities?.commitOnChange) return 0
    return this.#parkMs(sight)
  }

  /** How long a take blocked by `sight` may wait at the store (0: not worth it, or not possible). */
  #parkMs(sight: Sight): number {
    const ms = Math.min(this.#claim.parkable?.(sight) ?? 0, this.#left(), PARK_MAX)
    return ms >= PARK_MIN ? Math.floor(ms) : 0
  }

  async #park(sight: Sight, ms: number): Promise<State<H>> {
    const place = this.#line!.entry!
    const inLine = this.#parksInLine(sight)
    const keep = inLine && this.#claim.keepParked === true
    const sentAt = this.#ctx.clock.now()
    const trying = this.#claim.attempt(undefined, { place, first: this.#first || !inLine, waitChange: ms, keepParked: keep })
    const r = await awaitParked(this.#ctx, this.#signal, this.#line!, trying)
    if ('hold' in r || r.lostPlace || !r.sight || !sameBlockers(r.sight, sight)) return this.#tried(r, place)
    // A wait for success that ran out at the store: park again (the deadline check ends it when ours runs out).
    if (inLine && this.#ctx.clock.now() - sentAt >= ms * PARK_FULL) return this.#route(r.sight)
    // Nothing changed: the store's wait ran out, or it did not wait. Watch this round as without the capability.
    return { name: 'woke', wake: await waitForChange(this.#ctx, r.sight, this.#left(), this.#signal), sight: r.sight }
  }

  #woke(wake: Wake, sight: Sight): State<H> {
    switch (wake.kind) {
      case 'owner-gone':
        return { name: 'takeover', sight, owner: wake.owner }
      case 'event':
        return this.#route(this.#claim.afterEvent(sight, wake.event))
      case 'changed':
        return { name: 'look' }
      case 'timeout':
        return this.#route(sight) // the deadline check ends it
    }
  }

  /** After a try that may have left the line (`place`: it deleted our place if it won): the hold, or on with what blocks now. */
  #tried(r: Awaited<ReturnType<Claim<H>['attempt']>>, place: Entry | undefined): State<H> {
    if ('hold' in r) {
      // The winning commit deleted our place: leaving must not send a second delete before the hold is handed over.
      if (place) this.#line!.taken()
      return { name: 'won', hold: r.hold }
    }
    if (r.lostPlace) {
      this.#line!.lost()
      this.#first = false
    }
    return this.#route(r.sight)
  }

  #queued(): void {
    const fn = this.#onQueued
    this.#onQueued = undefined
    fn?.()
  }

  #startEarly(sight: Sight): Early {
    const cancel = new AbortController()
    return { sight, cancel, promise: waitForChange(this.#ctx, sight, this.#left(), this.#signal, cancel.signal) }
  }

  #dropEarly(): void {
    this.#early?.cancel.abort(DROPPED)
    this.#early = undefined
  }
}
