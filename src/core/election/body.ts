/**
 * The body of an election (see election.ts, which has the rules): the
 * campaign, the term and the leader as this candidate sees it. Loaded when a
 * candidate first campaigns or observes, so that apps that never elect carry
 * none of it; its events are dispatched on the `Election` it serves.
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
import type { Value, WatchEvent } from '../contract/adapter'
import { acquire } from '../acquire'
import type { Context } from '../context'
import { ClosedError, isZarisError } from '../contract/errors'
import { randomId } from '../contract/ids'
import { Hold } from '../hold/hold'
import type { Lease } from '../hold/lease'
import { Watch } from '../watch'

/** The current leader of an election. */
export interface Leader {
  /** The candidate name of the leader. */
  candidate: string
  /** The leader's fencing token: it rises with every new term. */
  token: number
}

/** What the body serves: the `Election` facade, its name and candidate, and the target of its events. */
export interface Face extends EventTarget {
  readonly name: string
  readonly candidate: string
}

/** One election seen from one candidate; `Election` delegates to it. */
export class ElectionBody {
  readonly #ctx: Context
  readonly #ttl: number
  /** The facade: its name and candidate, and the target of its events. */
  readonly #face: Face
  readonly name: string
  readonly candidate: string
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

  constructor(face: Face, ctx: Context, ttl: number) {
    this.#face = face
    this.name = face.name
    this.candidate = face.candidate
    this.#ctx = ctx
    this.#ttl = ttl
  }

  /** True while this candidate leads (its term has not ended by its own deadline). */
  get isLeader(): boolean {
    return this.#term?.held ?? false
  }

  /** The leader as last seen by this candidate, or `undefined`. */
  get leader(): Leader | undefined {
    return this.#leader
  }

  /** The current term while this candidate leads. */
  get term(): Lease<{ candidate: string }> | undefined {
    return this.#term?.held ? this.#term : undefined
  }

  /** See `Election.campaign`: resolves with the term, `null` once closed. */
  async campaign(signal: AbortSignal | undefined): Promise<Lease<{ candidate: string }> | null> {
    if (this.#term?.held) return this.#term
    if (this.#campaign) return this.#campaign
    // A closed election never gets here: `Election` answers `null` itself once closed.
    try {
      this.#ctx.assertOpen()
    } catch {
      return null // a closed client campaigns no more
    }
    this.#startObserving()
    const either = anyOf(signal, this.#closer.signal)
    this.#campaign = acquire(
      this.#ctx,
      { kind: 'lease', key: this.name, value: { candidate: this.candidate, client: clientOf(this.#ctx) }, won: (lease) => (this.#won = lease) },
      { ttl: this.#ttl, wait: Infinity, signal: either.signal, autoRenew: true, steal: false, inLine: undefined },
    ).then(
      (term) => {
        either.dispose()
        this.#settled()
        const lease = term!
        this.#term = lease
        this.#setLeader({ candidate: this.candidate, token: lease.token }, lease.revision)
        this.#face.dispatchEvent(new Event('elected'))
        const deposed = () => {
          if (this.#term === lease) this.#term = undefined
          this.#termEnded(lease.token)
          this.#face.dispatchEvent(new Event('deposed'))
        }
        // A term won by a commit answered after its TTL has already ended: no abort is to come.
        if (lease.signal.aborted) deposed()
        else lease.signal.addEventListener('abort', deposed) // a signal aborts once
        return lease
      },
      (err) => {
        either.dispose()
        this.#settled()
        // Closed (the client, its adapter, or this election): the campaign is over, without a term.
        if (isZarisError(err, 'CLOSED') && !signal?.aborted) return null
        throw err
      },
    )
    campaigning.add(this)
    return this.#campaign
  }

  /** The campaign under way ended (won or not): its win, if any, is a hold in `ctx.open` by now. */
  #settled(): void {
    this.#campaign = undefined
    campaigning.delete(this)
  }

  /** The campaigns under way on this name in this client: this election's, and a second election's on the same name. */
  #underWay(): Array<Promise<unknown>> {
    return [...campaigning].filter((b) => b.#ctx === this.#ctx && b.name === this.name).map((b) => b.#campaign!)
  }

  /** Settles when the first of the campaigns under way on this name settles (one may wait for ever while another wins). */
  #oneSettled(): Promise<unknown> {
    return Promise.race(this.#underWay().map((c) => c.catch(() => {})))
  }

  /** Gives up leadership (if held); true if this candidate was leading. */
  async resign(): Promise<boolean> {
    const term = this.#term
    this.#term = undefined
    if (term) this.#termEnded(term.token)
    return term ? term.revoke() : false
  }

  /** Every change of leader, starting with the current one; see `Election.observe`. */
  async *observe(signal: AbortSignal | undefined): AsyncGenerator<Leader | undefined> {
    const watch = new Watch(this.#ctx, this.name, { signal })
    try {
      await watch.ready
      const entry = await this.#ctx.adapter.get(this.name)
      let last = entry ? await this.#vouch(leaderOf(entry.value, entry.created), this.#mine(entry.owner, entry.value)) : undefined
      let seen = entry?.revision ?? 0
      if (entry) this.#setLeader(last, entry.revision)
      yield last
      for await (const ev of watch) {
        if (ev.revision <= seen) continue
        seen = ev.revision
        const next = await this.#vouch(ev.type === 'put' ? leaderOf(ev.value, ev.created!) : undefined, ev.type === 'put' && this.#mine(ev.owner, ev.value))
        // `leader` and its events say what this candidate last saw, observing included.
        this.#setLeader(next, ev.revision)
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

  /** Keeps `leader` current and fires `leader` events, from the first campaign on. */
  #startObserving(): void {
    if (this.#observer) return
    const watch = (this.#observer = new Watch(this.#ctx, this.name))
    void (async () => {
      try {
        await watch.ready
        const entry = await this.#ctx.adapter.get(this.name)
        if (entry) this.#see(leaderOf(entry.value, entry.created), entry.revision, this.#mine(entry.owner, entry.value))
        for await (const ev of watch) this.#onEvent(ev)
      } catch {
        // The client closed or the store went away; `leader` simply stops changing.
      }
    })()
  }

  #onEvent(ev: WatchEvent): void {
    this.#see(ev.type === 'put' ? leaderOf(ev.value, ev.created!) : undefined, ev.revision, ev.type === 'put' && this.#mine(ev.owner, ev.value))
  }

  /**
   * Whether this client wrote an entry of its owner and value: its id, and
   * (a term written since terms carry it) its own client mark. Another client
   * of the same id (a reload, a second tab or process) is another candidate.
   */
  #mine(owner: string | undefined, value: Value | undefined): boolean {
    const client = fieldOf(value, 'client')
    return owner === this.#ctx.id && (client === undefined || client === clientOf(this.#ctx))
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
    // Runs after that campaign's own continuation: its term is set by then (if still LATER, this waits again).
    void this.#oneSettled().then(flush)
  }

  /** {@link #judge}, waiting for the campaign under way where it must. */
  async #vouch(leader: Leader | undefined, mine: boolean): Promise<Leader | undefined> {
    for (;;) {
      const judged = this.#judge(leader, mine)
      if (judged !== LATER) return judged
      await this.#oneSettled()
    }
  }

  /**
   * What this candidate may say of `leader`: an entry this client wrote
   * (`mine`) names this candidate only while it holds that term; held by
   * another object of this client (a second election on the name), it is true
   * as it stands; seen while a campaign of this client is under way on the
   * name (this election's, or a second election's whose win reaches this
   * watch before its hold exists), it may be that campaign's win, not yet
   * known: {@link LATER}. Else (a term that ended, still in the store)
   * nobody this candidate can vouch for leads.
   */
  #judge(leader: Leader | undefined, mine: boolean): Leader | undefined | typeof LATER {
    if (!leader || !mine) return leader
    const term = this.#term
    if (term?.token === leader.token) return term.held ? leader : undefined
    for (const open of this.#ctx.open) if (open instanceof Hold && open !== term && open !== this.#won && open.key === this.name && open.token === leader.token) return leader
    return this.#underWay().length > 0 ? LATER : undefined
  }

  /** The term with `token` ended: stop naming this candidate leader (its entry may outlive it a moment). */
  #termEnded(token: number): void {
    if (this.#leader?.token !== token || this.#leader.candidate !== this.candidate) return
    this.#leader = undefined
    this.#face.dispatchEvent(new CustomEvent('leader'))
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
    this.#face.dispatchEvent(new CustomEvent('leader', { detail: leader }))
  }
}

/** Every election whose campaign is under way (each leaves when its campaign settles: nothing here outlives a campaign). */
const campaigning = new Set<ElectionBody>()

/** "Not yet": the news waits for the campaign under way. */
const LATER = Symbol('later')

/** A mark of each client object, written in its terms: which client of an id wrote a term. */
const marks = new WeakMap<Context, string>()

function clientOf(ctx: Context): string {
  let mark = marks.get(ctx)
  if (mark === undefined) marks.set(ctx, (mark = randomId()))
  return mark
}

function leaderOf(value: Value | undefined, created: number): Leader | undefined {
  const candidate = fieldOf(value, 'candidate')
  return typeof candidate === 'string' ? { candidate, token: created } : undefined
}

/** A field of a term's value, if it is an object. */
function fieldOf(value: Value | undefined, name: string): Value | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value[name] : undefined
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
  // `b` (the election's close) is never aborted here: a closed election does not campaign.
  if (a.aborted) onA()
  else {
    // No `once`: each signal aborts at most once, and `dispose` takes both listeners off.
    a.addEventListener('abort', onA)
    b.addEventListener('abort', onB)
  }
  return { signal: both.signal, dispose }
}
