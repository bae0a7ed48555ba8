/**
 * This process's side of commits parked in a `file://` store (parked.ts
 * keeps them in the file and hands over): each waits for the answer some
 * process's transaction writes into its row.
 *
 * The adapter follows the namespace's change log while any commit of it is
 * parked (the tail: woken by its own commits, the process's other
 * connections' and the kernel's note of another process's write, polled as
 * a backstop). An answer is only ever written in a transaction that changed
 * a key the commit checks, so an event at one of its keys is when its row is
 * read. Following the log also runs the store's timers while anything
 * waits: a holder's TTL ends at its deadline, and a dead holder's process is
 * looked for, with nobody else writing; either hands the key over.
 *
 * A wait ends at its deadline (taken out of park and given one last try:
 * its caller counts a hold's TTL from before it sent the commit), at its
 * caller's abort or the adapter's close (taken out of park; its first try's
 * failure answered). An answer written before stands, and is answered.
 *
 * @module
 */
import type { CommitResult, Unsubscribe, WatchSink } from '../../core/contract/adapter'
import type { Clock, TimerHandle } from '../../core/time/clock'
import { keepAlive } from '../../core/time/keep-alive'
import type { Failure, Ledger } from './ledger'
import { park, unpark, type ParkRequest } from './parked'

/** What the waits need of their store. */
export interface WaitHost {
  readonly clock: Clock
  /** Runs `fn` in a write transaction of the namespace (handing over included), waiting out a busy file. */
  write<T>(fn: (ledger: Ledger) => T): Promise<T>
  /** The answer kept in parked row `id`: null while it waits, undefined when the row is gone. */
  answer(id: number): CommitResult | null | undefined
  /** Follows every change of the namespace. */
  follow(sink: WatchSink): Unsubscribe
}

interface Wait {
  readonly id: number
  readonly req: ParkRequest
  readonly first: Failure
  readonly resolve: (r: CommitResult) => void
  readonly reject: (err: unknown) => void
  timer?: TimerHandle
  off?: () => void
  /** Lets the process end again (a wait keeps it running, as a socket would: its timers and the tail's do not). */
  live?: () => void
  /** Being taken out of park (its end's write under way). */
  ending: boolean
  done: boolean
}

/** The parked commits of one adapter; see the module doc. */
export class FileWaits {
  readonly #host: WaitHost
  readonly #byKey = new Map<string, Set<Wait>>()
  readonly #waits = new Set<Wait>()
  /** Waits to read the rows of, soon. */
  readonly #pending = new Set<Wait>()
  /** Commits between their first try and their wait (the log is followed from before the try). */
  #sending = 0
  #unfollow: Unsubscribe | undefined

  constructor(host: WaitHost) {
    this.#host = host
  }

  /** How many commits wait now. */
  get size(): number {
    return this.#waits.size
  }

  /**
   * Sends a commit that may park: its first try's answer, or the answer of
   * its wait. `onParked` is called once, if it parks.
   */
  async commit(req: ParkRequest, signal: AbortSignal | undefined, onParked: (() => void) | undefined): Promise<CommitResult> {
    // Followed before the try: an answer written by another process right after it is an event the tail sees.
    this.#sending++
    this.#follow()
    let r: Awaited<ReturnType<typeof park>>
    try {
      r = await this.#host.write((ledger) => park(ledger, req))
    } finally {
      this.#sending--
      this.#idle()
    }
    if (!('parked' in r)) return r
    const parked = r
    return new Promise<CommitResult>((resolve, reject) => {
      const w: Wait = { id: parked.parked, req, first: parked.first, resolve, reject, ending: false, done: false, live: keepAlive() }
      this.#waits.add(w)
      this.#follow()
      for (const key of keysOf(req)) {
        let set = this.#byKey.get(key)
        if (!set) this.#byKey.set(key, (set = new Set()))
        set.add(w)
      }
      w.timer = this.#host.clock.setTimeout(() => void this.#end(w, true), req.ms)
      if (signal) {
        const abort = () => void this.#end(w, false)
        signal.addEventListener('abort', abort, { once: true })
        w.off = () => signal.removeEventListener('abort', abort)
      }
      onParked?.()
      if (signal?.aborted) void this.#end(w, false)
      // Answered between its park and now (the tail may have shown that change before this wait was filed).
      else this.#look(w)
    })
  }

  /** Ends every wait (the adapter closes): each taken out of park, answered with its first try's failure or the answer it got. */
  async close(): Promise<void> {
    await Promise.all([...this.#waits].map((w) => this.#end(w, false)))
  }

  /** Follows the log while anything waits or is being sent. */
  #follow(): void {
    this.#unfollow ??= this.#host.follow({
      event: (e) => {
        for (const w of this.#byKey.get(e.key) ?? []) this.#look(w)
      },
      // The tail fell behind or ended: followed again, and every row read (an answer may be among what was missed).
      error: () => {
        this.#unfollow = undefined
        if (this.#waits.size === 0 && this.#sending === 0) return
        this.#follow()
        for (const w of this.#waits) this.#look(w)
      },
    })
  }

  #idle(): void {
    if (this.#waits.size > 0 || this.#sending > 0) return
    this.#unfollow?.()
    this.#unfollow = undefined
  }

  /** Reads `w`'s row soon (events of one read come together: one read of each row for them). */
  #look(w: Wait): void {
    if (this.#pending.size === 0) queueMicrotask(() => this.#read())
    this.#pending.add(w)
  }

  #read(): void {
    const ws = [...this.#pending]
    this.#pending.clear()
    for (const w of ws) {
      if (w.done || w.ending) continue
      let answer: CommitResult | null | undefined
      try {
        answer = this.#host.answer(w.id)
      } catch {
        // The file failing: its deadline ends the wait (and tells the caller why).
        continue
      }
      if (answer === undefined) void this.#end(w, true)
      else if (answer !== null) this.#finish(w, answer)
    }
  }

  /** Takes `w` out of park; `last`: gives it one last try (its deadline, or its row gone). */
  async #end(w: Wait, last: boolean): Promise<void> {
    if (w.done || w.ending) return
    w.ending = true
    this.#host.clock.clearTimeout(w.timer as TimerHandle)
    try {
      const r = await this.#host.write((ledger) => unpark(ledger, w.id, last ? w.req : undefined))
      this.#finish(w, r ?? w.first)
    } catch (err) {
      this.#finish(w, undefined, err)
    }
  }

  #finish(w: Wait, answer: CommitResult | undefined, error?: unknown): void {
    if (w.done) return
    w.done = true
    this.#waits.delete(w)
    for (const key of keysOf(w.req)) {
      const set = this.#byKey.get(key)
      if (set?.delete(w) && set.size === 0) this.#byKey.delete(key)
    }
    if (w.timer !== undefined) this.#host.clock.clearTimeout(w.timer)
    w.off?.()
    w.live?.()
    this.#idle()
    if (answer) w.resolve(answer)
    else w.reject(error)
  }
}

/** Every key a parked commit checks. */
function keysOf(req: ParkRequest): string[] {
  return [...req.checks, ...req.orElse.flatMap((w) => w.checks)].map((c) => c.key)
}
