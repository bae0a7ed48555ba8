/**
 * The parked commits of a store that hands over (capability `handover`, the
 * local store behind memory and the node's memory and SQLite stores).
 *
 * A commit whose check failed, sent with `waitChange`, waits here. Every
 * write of the store (a commit, an expiry, a parked commit that went
 * through) tells {@link ParkedCommits.changed} which keys it changed, in the
 * same synchronous step; the parked commits that check one of those keys
 * are then tried again at once, before the step's caller is answered and so
 * before any other commit, in the order the callers asked (`parkOrder`: a
 * waiter's place in line), then in the order they parked. A try that
 * goes through is applied as any commit (a revision of its own), its caller
 * is answered with it, and the keys it changed are judged in turn. So a
 * release hands a lock straight to the waiter whose take was parked.
 *
 * Nothing here knows locks: a parked commit is the caller's own planned
 * try. Which failed try is answered is the caller's choice:
 * - `keep` (`CommitOptions.keepParked`): only a try that goes through, or
 *   one where a check that held on the first try fails now (the caller's
 *   own entry it checks is gone: a waiter's place in line), or one that
 *   fails at a key now owned by `wakeOwner` (a shared waiter: a group it
 *   may join was started), or the end of the wait. A waiter behind others
 *   stays parked through every release that is not its turn, and costs no
 *   message.
 * - otherwise: the first try after a change that turned one of its checks
 *   (held to failing or back), as the node's watch-based parking does: a
 *   shared waiter learns that a group it may join was made.
 *
 * A waiter keeps its turn between two parks. A kept, ordered commit whose
 * wait ran out is answered (its caller counts a hold's TTL from before it
 * sent it, so it may not wait longer) and parks again at once; for
 * {@link TURN_KEPT_MS} meanwhile it keeps its turn at its keys: a parked or
 * arriving commit of a higher `parkOrder` there is not applied, even where
 * its checks hold (one whose wait ends then is answered with no failed
 * check: not its turn yet). The turn ends when a commit with its
 * `parkOrder` comes, when a check that held on its first try fails (the
 * waiter gave up its place), or after the time (the waiter is gone); the
 * commits it held back are tried then (after the commit that came is
 * applied or parked: it goes first). Without it, a release that falls
 * between a waiter's two parks would go to the waiter behind it.
 *
 * A parked commit may bring other ways to go through (`orElse`, each a
 * whole commit): each try applies the first of the commit and these whose
 * checks all hold, and a change at a key any of them checks tries it. What
 * is answered, and when, is judged on the commit's own checks; a turn holds
 * others back at the keys of every way. A semaphore's waiter parks one take
 * that may fill any free slot: the first in line gets the permit a release
 * frees, in the release's step.
 *
 * The cost of a change is one judgement per parked commit that checks a
 * changed key (its checks against the store's map): O(waiters) per release
 * of a lock they all wait on (times its other ways, for a semaphore's).
 *
 * @module
 */
import type { Check, CommitResult, Op } from '../../core/contract/adapter'
import type { Clock, TimerHandle } from '../../core/time/clock'
import { MinHeap, type Due } from './heap'

/**
 * How long, in ms, a waiter whose wait ran out keeps its turn (see the
 * module doc): its next park comes within a round trip; one that does not
 * come back within this is skipped.
 */
export const TURN_KEPT_MS = 1_000

/**
 * Most turns kept at once. Each needs a kept take whose wait ran out within
 * the last {@link TURN_KEPT_MS}, so a peer that parks short waits fast could
 * keep one per wait: past this many, a wait that runs out keeps no turn (its
 * waiter may then be overtaken once; nothing else changes). Small, as a
 * parked take's try looks through the turns at its keys.
 */
export const MAX_TURNS = 256

/** A commit's failure answer. */
export type Failure = Extract<CommitResult, { ok: false }>
/** A commit's success answer. */
export type Success = Extract<CommitResult, { ok: true }>

/** How a commit whose check fails waits (see `CommitOptions`). */
export interface ParkOptions {
  /** Most ms to wait (a whole, positive number). */
  ms: number
  /** `CommitOptions.keepParked`. */
  keep: boolean
  /** `CommitOptions.wakeOwner` (with `keep`). */
  wakeOwner?: string
  /** `CommitOptions.parkOrder`: tried before parked commits of a higher one (absent: after every ordered one). */
  order?: number
  /**
   * Called if the commit parks, with the function that ends its wait
   * (answered with its first try, never applied afterwards: a caller's
   * abort, an adapter's close); returns what undoes whatever it set up,
   * called once the commit is answered. Nothing is made for a commit that
   * does not park.
   */
  stop?: (end: () => void) => () => void
  /** Called once, synchronously, if the commit parks. */
  onParked?: () => void
  /** `CommitOptions.onAnswer`: told the answer of a commit that parked, in the step that answers it (not a rejection). */
  onAnswer?: (r: CommitResult) => void
  /** Handed to the store's persistence with the writes of a later try that goes through. */
  tag?: unknown
  /** `CommitOptions.orElse`: other commits that may go through instead, in order. */
  orElse?: ReadonlyArray<Plan>
}

/** A commit's checks and ops. */
export interface Plan {
  readonly checks: Check[]
  readonly ops: Op[]
}

/** What a store lends its parked commits. */
export interface ParkHost {
  readonly clock: Clock
  /** Brings the store up to date (expires what is due: that may be a step of its own). */
  expire(): void
  /** Whether `check` holds now. */
  holds(check: Check): boolean
  /** The owner of the live entry at `key` now, if any. */
  ownerOf(key: string): string | undefined
  /** The failure answer of `checks` now: each check that fails, with its key's live entry. */
  failure(checks: Check[]): Failure
  /** Applies `ops` as one commit (its checks hold now) and answers it; throws as a commit does. */
  apply(ops: Op[], tag: unknown): Success
}

/** One parked commit. */
class Parked implements Due {
  /** Its order (the heap's key), then when it came. */
  readonly at: number
  readonly tie: number
  heapIndex = -1
  /** Each check's outcome when last judged. */
  held: boolean[]
  readonly firstHeld: readonly boolean[]
  /** A change turned one of its checks since it parked (answered at its next try unless `keep`). */
  woken = false
  timer: TimerHandle | undefined
  unlisten: (() => void) | undefined
  settled = false

  constructor(
    seq: number,
    readonly checks: Check[],
    readonly ops: Op[],
    readonly first: Failure,
    readonly options: ParkOptions,
    held: boolean[],
    readonly resolve: (r: CommitResult) => void,
    readonly reject: (err: unknown) => void,
  ) {
    this.at = options.order ?? Infinity
    this.tie = seq
    this.held = held
    this.firstHeld = held.slice()
  }
}

/** The turn a kept, ordered commit keeps between its wait's end and its next park. */
interface Turn {
  readonly order: number
  /** Every key its commit checks: where it holds others back. */
  readonly keys: string[]
  /** The checks that held on its first try (its place): the turn ends when one fails. */
  readonly own: Check[]
  timer: TimerHandle | undefined
}

/** The parked commits of one store; see the module doc. */
export class ParkedCommits {
  readonly #host: ParkHost
  #seq = 0
  /** Parked commits by checked key, each set in the order they parked. */
  readonly #byKey = new Map<string, Set<Parked>>()
  /** The parked commits to try in the step under way, lowest first. */
  readonly #due = new MinHeap<Parked>()
  #running = false
  #count = 0
  #granted = 0
  /** Turns kept (see the module doc), by order and by each key they hold. */
  readonly #turns = new Map<number, Turn>()
  readonly #turnsByKey = new Map<string, Set<Turn>>()

  constructor(host: ParkHost) {
    this.#host = host
  }

  /** How many commits are parked. */
  get size(): number {
    return this.#count
  }

  /** How many turns are kept now (see {@link MAX_TURNS}). */
  get turns(): number {
    return this.#turns.size
  }

  /** How many parked commits went through so far (a caller can tell whether a step handed over). */
  get granted(): number {
    return this.#granted
  }

  /** A commit that carries `order` has come: the turn kept for that order ends (its waiter is back); true if one did. */
  back(order: number): boolean {
    const turn = this.#turns.get(order)
    if (turn) this.#endTurn(turn)
    return turn !== undefined
  }

  /**
   * Whether a commit with `order` whose checks hold must wait all the same:
   * an earlier waiter keeps its turn at one of `checks`' keys (then
   * {@link park} it, with no failed check).
   */
  behindTurn(checks: Check[], order: number): boolean {
    return this.#turns.size > 0 && this.#heldBack(checks, order)
  }

  /**
   * Parks a commit whose first try failed with `first` (judged in this same
   * synchronous step, so no change falls between): resolves its answer.
   */
  park(checks: Check[], ops: Op[], first: Failure, options: ParkOptions): Promise<CommitResult> {
    const wake = options.wakeOwner
    if (wake !== undefined && first.failed.some((f) => f.entry?.owner === wake)) return Promise.resolve(first)
    // Another way that goes through now is this commit's first try (same step: nothing fell between).
    const other = this.#otherWay(options)
    if (other) return this.#applyNow(other.ops, options.tag)
    return new Promise<CommitResult>((resolve, reject) => {
      const held = checks.map((c) => this.#host.holds(c))
      const p = new Parked(++this.#seq, checks, ops, first, options, held, resolve, reject)
      for (const key of keysOf(checks, options)) this.#watchKey(key, p)
      this.#count++
      p.timer = this.#host.clock.setTimeout(() => this.#timeout(p), options.ms)
      options.onParked?.()
      if (options.stop) {
        const undo = options.stop(() => this.#settle(p, p.first))
        // Ended within `stop` itself (a signal aborted already): nothing will call what it set up, so undo it now.
        if (p.settled) undo()
        else p.unlisten = undo
      }
      // A turn ended by this commit's coming (`back`) let what it held back through: try that now, this commit parked (its checks
      // failed: it waits for another of its keys). Else those would wait, their checks holding, for a change or their wait's end.
      this.changed([])
    })
  }

  /**
   * Keys a write just changed: tries the parked commits that check one of
   * them (see the module doc). Called by the store after every write; a
   * call made while a step is under way (by a try that went through) adds
   * to that step.
   */
  changed(keys: Iterable<string>): void {
    if (this.#count === 0 && this.#turns.size === 0) return
    for (const key of keys) {
      // A turn whose place is gone ends (its waiter gave up); what it held back is tried in this step.
      for (const t of this.#turnsByKey.get(key) ?? []) if (t.own.some((c) => c.key === key && !this.#host.holds(c))) this.#endTurn(t)
      const set = this.#byKey.get(key)
      if (!set) continue
      for (const p of set) {
        if (!p.options.keep && !p.woken) this.#judgeAt(p, key)
        this.#due.update(p)
      }
    }
    if (this.#running) return
    this.#running = true
    try {
      for (let p = this.#due.pop(); p !== undefined; p = this.#due.pop()) this.#retry(p)
    } finally {
      this.#running = false
    }
  }

  /** Tries the parked commits that check a key written or deleted by `r`, a commit just applied. */
  committed(r: Success): void {
    if (this.#count === 0 && this.#turns.size === 0) return
    const keys: string[] = r.deleted.slice()
    for (const e of r.entries) keys.push(e.key)
    this.changed(keys)
  }

  /** Answers every parked commit with its first try (the store is closing). */
  closeAll(): void {
    for (const t of [...this.#turns.values()]) this.#endTurn(t)
    for (const set of [...this.#byKey.values()]) for (const p of set) this.#settle(p, p.first)
  }

  /** Files `p` under `key`, one of the keys it checks. */
  #watchKey(key: string, p: Parked): void {
    let set = this.#byKey.get(key)
    if (!set) this.#byKey.set(key, (set = new Set()))
    set.add(p)
  }

  /** The first of `options.orElse` whose checks all hold now and that no earlier waiter's turn holds back. */
  #otherWay(options: ParkOptions): Plan | undefined {
    const order = options.order
    return options.orElse?.find((alt) => alt.checks.every((c) => this.#host.holds(c)) && (order === undefined || !this.behindTurn(alt.checks, order)))
  }

  /** A first try that went through another way: applied and answered now, and the keys it changed judged. */
  #applyNow(ops: Op[], tag: unknown): Promise<CommitResult> {
    let r: Success
    try {
      r = this.#host.apply(ops, tag)
    } catch (err) {
      return Promise.reject(err)
    }
    this.committed(r)
    return Promise.resolve(r)
  }

  /** Marks `p` woken if a change at `key` turned one of its checks there. */
  #judgeAt(p: Parked, key: string): void {
    p.checks.forEach((c, i) => {
      if (c.key !== key) return
      const now = this.#host.holds(c)
      if (now !== p.held[i]) p.woken = true
      p.held[i] = now
    })
  }

  /** One more try of `p`, in the step of a change it checks. */
  #retry(p: Parked): void {
    if (p.settled) return
    const outcomes = p.checks.map((c) => this.#host.holds(c))
    if (outcomes.every(Boolean)) {
      if (!this.#behind(p)) return this.#apply(p, p.ops)
      p.held = outcomes
      return
    }
    const other = this.#otherWay(p.options)
    if (other) return this.#apply(p, other.ops)
    const answer = p.options.keep ? outcomes.some((h, i) => !h && (p.firstHeld[i] || this.#wakes(p, p.checks[i]!))) : p.woken
    p.held = outcomes
    if (answer) this.#settle(p, this.#host.failure(p.checks))
  }

  /** Whether the failed check `c` of `p` is at a key now owned by the owner `p` wakes for. */
  #wakes(p: Parked, c: Check): boolean {
    return p.options.wakeOwner !== undefined && this.#host.ownerOf(c.key) === p.options.wakeOwner
  }

  /** Its wait ran out: one last try, answered whatever it comes to; a waiter in line keeps its turn till it parks again. */
  #timeout(p: Parked): void {
    p.timer = undefined
    this.#host.expire()
    if (p.settled) return
    // No other way to look at: every change at a key they check tried them, the expiry just now too.
    if (p.checks.every((c) => this.#host.holds(c)) && !this.#behind(p)) return this.#apply(p, p.ops)
    const failure = this.#host.failure(p.checks)
    const order = p.options.order
    if (p.options.keep && order !== undefined) this.#keepTurn(p, order)
    this.#settle(p, failure)
  }

  /** Whether an earlier waiter's kept turn holds `p` back. */
  #behind(p: Parked): boolean {
    return p.options.order !== undefined && this.behindTurn(p.checks, p.options.order)
  }

  #heldBack(checks: Check[], order: number): boolean {
    for (const c of checks) for (const t of this.#turnsByKey.get(c.key) ?? []) if (t.order < order) return true
    return false
  }

  #keepTurn(p: Parked, order: number): void {
    const old = this.#turns.get(order)
    if (old) this.#endTurn(old)
    if (this.#turns.size >= MAX_TURNS) return
    const keys = [...new Set(keysOf(p.checks, p.options))]
    const turn: Turn = { order, keys, own: p.checks.filter((_, i) => p.firstHeld[i]), timer: undefined }
    this.#turns.set(order, turn)
    for (const k of keys) {
      let set = this.#turnsByKey.get(k)
      if (!set) this.#turnsByKey.set(k, (set = new Set()))
      set.add(turn)
    }
    turn.timer = this.#host.clock.setTimeout(() => {
      turn.timer = undefined
      this.#host.expire()
      this.#endTurn(turn)
      this.changed([])
    }, TURN_KEPT_MS)
  }

  /** Ends `turn`: the commits it held back at its keys are due in the step under way (or the next `changed`). */
  #endTurn(turn: Turn): void {
    if (this.#turns.get(turn.order) !== turn) return
    this.#turns.delete(turn.order)
    if (turn.timer !== undefined) this.#host.clock.clearTimeout(turn.timer)
    for (const k of turn.keys) {
      const set = this.#turnsByKey.get(k)
      if (set?.delete(turn) && set.size === 0) this.#turnsByKey.delete(k)
      for (const p of this.#byKey.get(k) ?? []) this.#due.update(p)
    }
  }

  /** Applies `ops` of `p` (their checks hold now), answers it, and judges the keys it changed. */
  #apply(p: Parked, ops: Op[]): void {
    let r: Success
    try {
      r = this.#host.apply(ops, p.options.tag)
    } catch (err) {
      this.#settle(p, undefined, err)
      return
    }
    this.#granted++
    this.#settle(p, r)
    this.committed(r)
  }

  #settle(p: Parked, answer: CommitResult | undefined, error?: unknown): void {
    if (p.settled) return
    p.settled = true
    this.#count--
    for (const key of keysOf(p.checks, p.options)) {
      const set = this.#byKey.get(key)
      if (set?.delete(p) && set.size === 0) this.#byKey.delete(key)
    }
    this.#due.remove(p)
    if (p.timer !== undefined) this.#host.clock.clearTimeout(p.timer)
    p.unlisten?.()
    if (!answer) return p.reject(error)
    // The early notice first (a node writes the answer from it), then the promise.
    p.options.onAnswer?.(answer)
    p.resolve(answer)
  }
}

/** Every key a parked commit checks, in its own checks and its other ways'. */
function keysOf(checks: Check[], options: ParkOptions): string[] {
  const keys = checks.map((c) => c.key)
  for (const alt of options.orElse ?? []) for (const c of alt.checks) keys.push(c.key)
  return keys
}
