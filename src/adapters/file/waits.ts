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
 * waits: a holder's TTL ends at its deadline with nobody else writing. And
 * each holder in a wait's way is looked at every few ms, as a waiter's
 * `ownerGone` does: a dead holder's process is found at once. Either ends
 * in a write that hands the key over.
 *
 * A wait ends at its deadline (taken out of park and given one last try:
 * its caller counts a hold's TTL from before it sent the commit), at its
 * caller's abort or the adapter's close (taken out of park; its first try's
 * failure answered). An answer written before stands, and is answered.
 *
 * @module
 */
import type { CommitResult, Unsubscribe, WatchEvent, WatchSink } from '../../core/contract/adapter'
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
  /** Calls `fn` once client `owner` is gone and its entries ended (in a write that hands over what they held); returns what stops it. */
  watchOwner(owner: string, fn: () => void): () => void
}

interface Wait {
  readonly id: number
  readonly req: ParkRequest
  readonly first: Failure
  readonly resolve: (r: CommitResult) => void
  readonly reject: (err: unknown) => void
  timer?: TimerHandle
  off?: () => void
  /** The owner in its way looked at, by key (the holder there now), and what ends that look. */
  readonly looks: Map<string, { owner: string; stop: () => void }>
  /** Lets the process end again (a wait keeps it running, as a socket would: its timers and the tail's do not). */
  readonly live: () => void
  /** The puts that would show it granted ({@link grantsOf}); undefined: every change at its keys is read. */
  readonly grants: Map<string, Set<string>> | undefined
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
  #closed = false

  constructor(host: WaitHost) {
    this.#host = host
  }

  /**
   * Sends a commit that may park: its first try's answer, or the answer of
   * its wait. `onParked` is called once, if it parks.
   */
  async commit(req: ParkRequest, signal: AbortSignal | undefined, onParked: (() => void) | undefined): Promise<CommitResult> {
    // Followed while the try runs (its wait, once filed, reads its row at once: what came between is not lost).
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
    if (this.#closed) {
      // The adapter closed while the try waited out a busy file: out of park at once, as a close ends any wait.
      const answer = await this.#host.write((ledger) => unpark(ledger, parked.parked, undefined)).catch(() => undefined)
      return answer ?? parked.first
    }
    return new Promise<CommitResult>((resolve, reject) => {
      const w: Wait = { id: parked.parked, req, first: parked.first, resolve, reject, ending: false, done: false, live: keepAlive(), looks: new Map(), grants: grantsOf(req) }
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
      for (const f of parked.first.failed) this.#lookAtOwner(w, f.key, f.entry?.owner)
      onParked?.()
      if (signal?.aborted) void this.#end(w, false)
      // Answered between its park and now (the tail may have shown that change before this wait was filed).
      else this.#look(w)
    })
  }

  /** Ends every wait (the adapter closes): each taken out of park, answered with its first try's failure or the answer it got. */
  async close(): Promise<void> {
    this.#closed = true
    await Promise.all([...this.#waits].map((w) => this.#end(w, false)))
  }

  /** Follows the log while anything waits or is being sent. */
  #follow(): void {
    this.#unfollow ??= this.#host.follow({
      event: (e) => {
        for (const w of this.#byKey.get(e.key) ?? []) {
          if (mayAnswer(w, e)) this.#look(w)
          this.#lookAtOwner(w, e.key, e.type === 'put' ? e.owner : undefined)
        }
      },
      // The tail fell behind or ended: followed again, and every row read (an answer may be among what was missed).
      // (Only a live subscription hears this, and one lives only while a commit waits or is being sent: #idle ends it
      // in the same step as the last of them, and neither ends inside another sink's call.)
      error: () => {
        this.#unfollow = undefined
        this.#follow()
        for (const w of this.#waits) this.#look(w)
      },
    })
  }

  /**
   * Looks at `owner`, who holds `key` (a key `w` checks) now, as a waiter's
   * `ownerGone` does (every few ms): a dead holder's process is found at
   * once, and the write that ends its entries hands the key over. (The
   * store's own sweep, which runs while the log is followed, looks only
   * every 50 ms.) The look at the key's former holder ends.
   */
  #lookAtOwner(w: Wait, key: string, owner: string | undefined): void {
    const look = w.looks.get(key)
    if (look?.owner === owner) return
    look?.stop()
    w.looks.delete(key)
    if (owner !== undefined) w.looks.set(key, { owner, stop: this.#host.watchOwner(owner, () => this.#look(w)) })
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
    w.live()
    for (const look of w.looks.values()) look.stop()
    this.#idle()
    if (answer) w.resolve(answer)
    else w.reject(error)
  }
}

/**
 * Whether the transaction that wrote `e` (at a key `w` checks) may have
 * answered `w`, so that its row is worth a read: a put by `w`'s own owner
 * at a key one of its ways writes (its grant); a change at a key whose check
 * held on its first try (its place gone: `keepParked`'s failure); a put by
 * its `wakeOwner`. Only for a `keepParked` commit whose every way sets an
 * owned key (a take: every grant shows as such a put); any other is read at
 * every change. A grant to the waiter ahead, the common event, is none of
 * these.
 */
function mayAnswer(w: Wait, e: WatchEvent): boolean {
  const { req, first, grants } = w
  if (!grants) return true
  if (e.type === 'put' && e.owner !== undefined && (e.owner === req.wakeOwner || grants.get(e.key)?.has(e.owner))) return true
  return req.checks.some((c) => c.key === e.key) && !first.failed.some((f) => f.key === e.key)
}

/** The puts that would show `req` granted (key to owners), or undefined when a grant may show otherwise. */
function grantsOf(req: ParkRequest): Map<string, Set<string>> | undefined {
  if (!req.keep) return undefined
  const out = new Map<string, Set<string>>()
  for (const way of [req, ...req.orElse]) {
    let shows = false
    for (const op of way.ops) {
      if (op.type !== 'set' || op.owner === undefined) continue
      shows = true
      let owners = out.get(op.key)
      if (!owners) out.set(op.key, (owners = new Set()))
      owners.add(op.owner)
    }
    if (!shows) return undefined
  }
  return out
}

/** Every key a parked commit checks. */
function keysOf(req: ParkRequest): string[] {
  return [...req.checks, ...req.orElse.flatMap((w) => w.checks)].map((c) => c.key)
}
