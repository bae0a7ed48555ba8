/**
 * Commits that wait for a change (the wire's `waitChange` and `keepParked`,
 * the HTTP adapter's capabilities `commitOnChange` and `keepParked`).
 *
 * A store that hands over (capability `handover`: the node's memory and
 * SQLite stores) keeps the commit itself and tries it again inside the step
 * of the change that may let it through (adapters/kit/parked.ts): the node
 * only bounds it and ends it with its connection.
 *
 * Any other store (a Redis or etcd behind the node): the node tries the
 * commit now; if a check fails, it keeps the commit parked until the outcome
 * of one of its checks may have changed (a put, delete or expiry at a
 * checked key that the last try's answer does not already account for),
 * tries it once more in the tick of that change and answers with that try —
 * or, with `keepParked`, goes on waiting while the try fails only where the
 * first one did. After `waitChange` ms with no such change it answers the
 * failure it has. Nothing here knows locks: it is a compare-and-set whose
 * later tries run inside the node, saving the client an event hop and a
 * request hop. The trigger is the store's own watch, so changes made through
 * other nodes and expiries wake it too. The watches are set up before each
 * try, so a change between the try and the wait is not missed; the events
 * that came before its answer are judged against it (the latest per key: the
 * state the try saw, or a later one).
 *
 * Bounded: at most `maxParked` parked commits per node, `maxPerConnection`
 * per connection, `maxParkedBytes` of their requests, and `maxWaitMs` each.
 * Past a cap the commit is tried once and answered, as a plain commit (never
 * an error). A connection that closes drops its parked commits, and so does
 * the node's shutdown: a dropped commit is answered with its first try.
 *
 * @module
 */
import type { Adapter, Check, CommitOptions, CommitResult, Op, Unsubscribe, WatchEvent } from '../core/contract/adapter'

/** Bounds of a node's parked commits. */
export interface ParkLimits {
  /** Most commits parked at once on the node. Default 4 096. */
  maxParked: number
  /** Most commits parked at once by one connection. Default 64. */
  maxPerConnection: number
  /** Most bytes of parked requests (their JSON, counted twice for UTF-16). Default 8 MiB. */
  maxParkedBytes: number
  /** The longest wait; a longer `waitChange` is cut to it. Default 30 000 ms. */
  maxWaitMs: number
}

export const PARK_DEFAULTS: ParkLimits = { maxParked: 4_096, maxPerConnection: 64, maxParkedBytes: 8 * 1024 * 1024, maxWaitMs: 30_000 }

/** One client connection, as far as parked commits care: how many it has parked, and its end. */
export class ParkConnection {
  parked = 0
  #closed = false
  readonly #drops = new Set<() => void>()
  #stop: AbortController | undefined
  #parent: ParkConnection | undefined

  get closed(): boolean {
    return this.#closed
  }

  /** Closes this connection's parking with `parent` (the node's), once. */
  closeWith(parent: ParkConnection): void {
    if (this.#parent) return
    this.#parent = parent
    const undo = parent.onClose(() => this.close())
    this.onClose(undo)
  }

  /** Aborts when the connection closes (one for all its commits, made on first use). */
  get signal(): AbortSignal {
    this.#stop ??= new AbortController()
    if (this.#closed) this.#stop.abort(CLOSED)
    return this.#stop.signal
  }

  /** Calls `fn` when the connection closes, until the returned function is called. */
  onClose(fn: () => void): () => void {
    this.#drops.add(fn)
    return () => this.#drops.delete(fn)
  }

  /** The connection is gone: its parked commits are dropped. */
  close(): void {
    // Again is harmless: the signal aborts once, and the drops are gone.
    this.#closed = true
    this.#stop?.abort(CLOSED)
    for (const fn of [...this.#drops]) fn()
    this.#drops.clear()
  }
}

/** The reason a connection's signal aborts with (made once: nobody reads it). */
const CLOSED = new Error('the connection closed')

/** How a commit waits: `CommitOptions.waitChange` (ms), `keepParked`, `parkOrder`, `wakeOwner` and `orElse`. */
export interface ParkWait {
  ms: number
  keep?: boolean
  order?: number
  wakeOwner?: string
  /** `CommitOptions.orElse`, for a store that takes other ways (the caller refuses them for any other). */
  orElse?: CommitOptions['orElse']
  /** What the request counts against the bound of parked bytes (its JSON, twice for UTF-16), if the caller has it. */
  bytes?: number
  /** `CommitOptions.onAnswer`, for a store that hands over (others never call it). */
  onAnswer?: (r: CommitResult) => void
  /** Called once if the commit's first try failed and it waits. */
  onParked?: () => void
}

/** Counts for `/metrics` and tests. */
export interface ParkCounts {
  /** Commits parked (their first try failed and they waited). */
  parked: number
  /** Parked commits tried a second time after a change. */
  retried: number
  /** Waiting commits answered at once because a cap was reached. */
  refused: number
  /** Commits waiting right now (their first try failed). */
  now: number
}

/** The parked commits of one node. */
export class Parking {
  readonly #limits: ParkLimits
  readonly #node = new ParkConnection()
  #now = 0
  #bytes = 0
  readonly counts: ParkCounts = { parked: 0, retried: 0, refused: 0, now: 0 }

  constructor(limits: Partial<ParkLimits> = {}) {
    this.#limits = { ...PARK_DEFAULTS, ...limits }
  }

  /**
   * Commits on `adapter`, waiting up to `waitMs` for a change if a check
   * fails (with `keep`: for a try that goes through); see the module doc.
   * `connOf` gives the connection the commit came on, asked only if the
   * commit may wait.
   */
  async commit(adapter: Adapter, checks: Check[], ops: Op[], options: CommitOptions | undefined, wait: ParkWait, connOf?: () => ParkConnection | undefined): Promise<CommitResult> {
    const ms = Math.min(wait.ms, this.#limits.maxWaitMs)
    const keep = wait.keep === true
    const bytes = ms > 0 && checks.length > 0 ? (wait.bytes ?? 2 * JSON.stringify([checks, ops]).length) : 0
    const l = this.#limits
    const conn = bytes > 0 ? connOf?.() : undefined
    if (bytes === 0 || this.#node.closed || this.#now >= l.maxParked || this.#bytes + bytes > l.maxParkedBytes || (conn && (conn.closed || conn.parked >= l.maxPerConnection))) {
      if (bytes > 0) this.counts.refused++
      return adapter.commit(checks, ops, options)
    }
    // The bounds count a waiting commit from its first try on; the gauge only once it waits.
    this.#now++
    this.#bytes += bytes
    if (conn) conn.parked++
    let waiting = false
    const parked = () => {
      waiting = true
      this.counts.parked++
      this.counts.now++
      wait.onParked?.()
    }
    try {
      if (adapter.capabilities?.handover) return await this.#inStore(adapter, checks, ops, { ...options, waitChange: ms, keepParked: keep, parkOrder: wait.order, wakeOwner: wait.wakeOwner, orElse: wait.orElse, onAnswer: wait.onAnswer }, conn, parked)
      return await this.#watched(adapter, checks, ops, options, ms, keep, keep ? wait.wakeOwner : undefined, conn, parked)
    } finally {
      this.#now--
      this.#bytes -= bytes
      if (waiting) this.counts.now--
      if (conn) conn.parked--
    }
  }

  /**
   * A store that hands over keeps the commit: the node ends it with the
   * connection it came on (the node's shutdown closes the store, which ends
   * them all). A store whose answers are final when given tells it through
   * `options.onAnswer` in the step that answers it.
   */
  async #inStore(adapter: Adapter, checks: Check[], ops: Op[], options: CommitOptions, conn: ParkConnection | undefined, parked: () => void): Promise<CommitResult> {
    let waited = false
    const onParked = () => {
      waited = true
      parked()
    }
    conn?.closeWith(this.#node)
    const signal = (conn ?? this.#node).signal
    const r = await adapter.commit(checks, ops, { ...options, signal, onParked })
    // Answered by a later try that went through.
    if (waited && r.ok) this.counts.retried++
    return r
  }

  /**
   * Any other store: the node watches the checked keys and tries again on a
   * change. With `keep`, `wakeOwner` is the owner a try that fails at a key
   * it holds is answered for.
   */
  async #watched(adapter: Adapter, checks: Check[], ops: Op[], options: CommitOptions | undefined, ms: number, keep: boolean, wakeOwner: string | undefined, conn: ParkConnection | undefined, parked: () => void): Promise<CommitResult> {
    const spot = new Spot(checks)
    try {
      await spot.watch(adapter)
      const first = await adapter.commit(checks, ops, options)
      if (first.ok || woken(first, wakeOwner)) return first
      parked()
      const until = performance.now() + ms
      let last: Extract<CommitResult, { ok: false }> = first
      for (;;) {
        if (!(await spot.wait(last, until - performance.now(), [this.#node, conn]))) return last
        this.counts.retried++
        spot.rearm()
        const r = await adapter.commit(checks, ops, options)
        // Without `keep`, the try after the change is the answer; with it, only one that went through or lost what held.
        if (r.ok || !keep || lostHeld(first, r) || woken(r, wakeOwner)) return r
        last = r
      }
    } finally {
      spot.end()
    }
  }

  /** The node is shutting down: every parked commit is answered with its first try. */
  close(): void {
    this.#node.close()
  }
}

/** The watches and the wait of one parked commit. */
class Spot {
  readonly #checks: Check[]
  readonly #keys: string[]
  readonly #unwatch: Unsubscribe[] = []
  /** Before the first answer: the latest event per key. */
  #latest: Map<string, WatchEvent> | undefined = new Map()
  /** After it: which keys' checks failed. */
  #failed: Set<string> | undefined
  /** Resolves the wait: true on a change, false when it ended without one. */
  #wake: ((changed: boolean) => void) | undefined
  /** How the wait ended, once it did (it may end before it begins). */
  #woken: boolean | undefined

  constructor(checks: Check[]) {
    this.#checks = checks
    this.#keys = [...new Set(checks.map((c) => c.key))]
  }

  /** Watches every checked key; resolves once the store delivers every later change. */
  async watch(adapter: Adapter): Promise<void> {
    await Promise.all(
      this.#keys.map(async (key) => {
        // A watch that fails, or cannot be set up, counts as a change: a try is better than a blind wait.
        const sink = { event: (ev: WatchEvent) => this.#event(key, ev), error: () => this.#end(true) }
        const unwatch = await adapter.watch(key, sink).catch(() => {
          this.#end(true)
          return () => {}
        })
        this.#unwatch.push(unwatch)
      }),
    )
  }

  /** Before another try: events from now on are judged against its answer (as before the first). */
  rearm(): void {
    this.#latest = new Map()
    this.#failed = undefined
    this.#wake = undefined
    this.#woken = undefined
  }

  /**
   * Waits, after a try failed, for a change that may flip one of its checks:
   * true on one; false after `ms` without one, or once a connection closes.
   */
  wait(first: Extract<CommitResult, { ok: false }>, ms: number, conns: Array<ParkConnection | undefined>): Promise<boolean> {
    this.#failed = new Set(first.failed.map((f) => f.key))
    const latest = this.#latest!
    this.#latest = undefined
    for (const ev of latest.values()) if (this.#flips(ev)) this.#end(true)
    if (this.#woken !== undefined) return Promise.resolve(this.#woken)
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => this.#end(false), ms)
      const undrop = conns.map((c) => c?.onClose(() => this.#end(false)))
      this.#wake = (changed) => {
        clearTimeout(timer)
        for (const u of undrop) u?.()
        resolve(changed)
      }
      if (conns.some((c) => c?.closed)) this.#end(false)
    })
  }

  end(): void {
    for (const u of this.#unwatch) u()
    this.#unwatch.length = 0
  }

  #event(key: string, ev: WatchEvent): void {
    // A prefix watch: only the key itself counts.
    if (ev.key !== key) return
    if (this.#latest) this.#latest.set(key, ev)
    else if (this.#flips(ev)) this.#end(true)
  }

  /** Whether, after `ev`, some check at its key would come out otherwise than in the first try. */
  #flips(ev: WatchEvent): boolean {
    for (const c of this.#checks) {
      if (c.key !== ev.key) continue
      const held = !this.#failed!.has(c.key)
      if (holdsAfter(c, ev) !== held) return true
    }
    return false
  }

  /** Ends the wait (its first ending resolves it; a later one changes nothing). */
  #end(changed: boolean): void {
    this.#woken = changed
    this.#wake?.(changed)
  }
}

/** Whether a later failed try `r` failed a check that held on the first try (`first`): the caller lost something it owns. */
function lostHeld(first: Extract<CommitResult, { ok: false }>, r: Extract<CommitResult, { ok: false }>): boolean {
  const failedFirst = new Set(first.failed.map((f) => f.key))
  return r.failed.some((f) => !failedFirst.has(f.key))
}

/** Whether a failed try is answered for `wakeOwner`: it failed at a key that owner holds. */
function woken(r: Extract<CommitResult, { ok: false }>, wakeOwner: string | undefined): boolean {
  return wakeOwner !== undefined && r.failed.some((f) => f.entry?.owner === wakeOwner)
}

/** Whether check `c` holds once `ev` happened at its key. */
function holdsAfter(c: Check, ev: WatchEvent): boolean {
  const byRevision = 'revision' in c
  const want = byRevision ? c.revision : (c as { created: number | null }).created
  if (ev.type !== 'put') return want === null
  return byRevision ? want === ev.revision : want === (ev.created ?? ev.revision)
}
