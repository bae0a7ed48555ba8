/**
 * A store that lives in this process: the kernel of the memory adapter and of
 * the node's SQLite store. Entries sit in a Map (O(1) get and commit), expiry
 * deadlines in a min-heap with one timer for the earliest (no sweeps), recent
 * events in an {@link EventLog} for watch replays.
 *
 * A deleted key keeps its Map slot as a tombstone instead of being removed:
 * in V8 (Node 20) a `delete` followed by a `set` of the same key costs time
 * proportional to the Map's size (each cycle lengthens the key's hash chain
 * until the table is rehashed), and a lock's release + acquire is exactly
 * that cycle. Tombstones are dropped by rebuilding the Map once they
 * outnumber the live entries, so that costs O(1) amortised. Nothing else on
 * a commit's path depends on how many keys the store holds, beyond the
 * O(log n) heap step of a TTL write or delete.
 *
 * A durable store passes a {@link Persistence}: each commit and each expiry is
 * written through it, synchronously, before memory changes, so what a commit
 * acknowledges is on disk and a failed write changes nothing.
 *
 * @module
 */
import type { Check, CommitResult, Entry, HistoryLimits, HistoryPage, ListPage, Op, Unsubscribe, WatchSink } from '../../core/contract/adapter'
import type { Clock, TimerHandle } from '../../core/time/clock'
import { ClosedError, TooLargeError } from '../../core/contract/errors'
import { checkCommitArgs, checkKey, checkPrefix } from '../../core/contract/validate'
import { entryBytes, EventLog, type LogBudget } from './event-log'
import { KeyIndex } from './key-index'
import { MinHeap } from './heap'
import { ParkedCommits, type Failure, type ParkOptions, type Success } from './parked'
import { copyValue as copy, floorRevision, hasRevisionLeft, nextRevision, toEntry, written, type Stored } from './write'

/**
 * Where a durable store writes. Must throw (and write nothing) on failure.
 * `parked`: the `tag` of a parked commit whose later try this write is (see
 * parked.ts); undefined for a commit's own write and for an expiry.
 */
export interface Persistence {
  write(revision: number, puts: Stored[], deletes: string[], parked?: unknown): void
}

export interface LocalStoreOptions {
  clock: Clock
  /** How many recent events are kept for watch replays. Default 10 000. */
  historySize?: number
  /** Most bytes of recent events kept (estimated; see event-log.ts), and a budget shared with other stores. */
  historyBytes?: number
  historyBudget?: LogBudget
  persistence?: Persistence
  /** Bytes the entries of this store and others sharing the quota may take. */
  quota?: StoreQuota
  /** A durable store's state at start: each key once (a saved store holds one entry a key). */
  initial?: { revision: number; entries: Iterable<Stored> }
}

/**
 * A byte budget shared by the entries of a node's stores (etcd's
 * `--quota-backend-bytes`): a commit that would grow them past it is refused
 * with TOO_LARGE; commits that do not grow them (renewals, releases, deletes,
 * same-size overwrites) still go through.
 *
 * @example
 * const quota = new StoreQuota(64 * 1024 * 1024)
 * const store = new LocalStore({ clock: systemClock, quota })
 */
export class StoreQuota {
  /** Bytes the entries hold now. */
  used = 0
  constructor(readonly maxBytes: number) {}
}

/** Below this many tombstones the Map is never rebuilt: a rebuild of a small store would cost more than it saves. */
const MIN_TOMBSTONES = 1024
/** After an expiry failed to be written, the timer tries again this much later. */
const EXPIRY_RETRY_MS = 1000

/**
 * A key's place in the store. It outlives the entry: a delete leaves the slot
 * as a tombstone (`entry` undefined) and the next write of the key fills it
 * again, so a lock's release + acquire touches no Map structure at all. The
 * slot is also the key's item in the expiry heap while its entry has a TTL.
 */
class Slot {
  entry: Stored | undefined = undefined
  /** The entry's bytes (see entryBytes), counted in the store's quota. */
  bytes = 0
  /** The entry's expiry deadline while it is in the heap. */
  at = Infinity
  heapIndex = -1
}

export class LocalStore {
  readonly clock: Clock
  #revision = 0
  /** Every key written since the last rebuild; a slot without an entry is a tombstone: absent everywhere. */
  #slots = new Map<string, Slot>()
  /** How many slots hold an entry; the rest are tombstones. */
  #live = 0
  /** Every slot's key (tombstones too, until the Map is rebuilt), sorted for `list` pages. */
  #index = new KeyIndex()
  /** The slots whose entry has a TTL, earliest deadline first. */
  #expiry = new MinHeap<Slot>()
  #timer: TimerHandle | undefined
  #timerAt = Infinity
  #log: EventLog
  #persistence: Persistence | undefined
  readonly #quota: StoreQuota
  /** Whether entries' bytes are counted (there is a quota). */
  readonly #counts: boolean
  /** Commits waiting for a change (capability `handover`). */
  readonly #parked: ParkedCommits

  constructor(options: LocalStoreOptions) {
    this.clock = options.clock
    this.#persistence = options.persistence
    this.#quota = options.quota ?? new StoreQuota(Infinity)
    this.#counts = this.#quota.maxBytes !== Infinity
    const initial = options.initial
    if (initial) {
      this.#revision = initial.revision
      for (const e of initial.entries) this.#fill(this.#newSlot(e.key), e, this.#counts ? entryBytes(e.key, e.value, e.owner) : 0)
    }
    this.#log = new EventLog({ maxEvents: options.historySize ?? 10_000, maxBytes: options.historyBytes, budget: options.historyBudget }, this.#revision)
    this.#parked = new ParkedCommits({
      clock: this.clock,
      expire: () => void this.#expireDue(),
      holds: (check) => holds(check, this.#slots.get(check.key)?.entry),
      ownerOf: (key) => this.#slots.get(key)?.entry?.owner,
      failure: (checks) => this.#failure(checks, this.clock.now()),
      apply: (ops, tag) => this.#write(ops, this.clock.now(), undefined, undefined, tag),
    })
    this.#schedule()
  }

  /** How many commits are parked, waiting for a change. */
  get parked(): number {
    return this.#parked.size
  }

  /** How many waiters' turns are kept now (parked.ts: at most `MAX_TURNS`). */
  get turns(): number {
    return this.#parked.turns
  }

  /** A parked commit's answer is final when given: nothing is left to make durable (`LocalBackend.answersAtOnce`). */
  get answersAtOnce(): boolean {
    return this.#persistence === undefined
  }

  /** How many parked commits went through so far. */
  get granted(): number {
    return this.#parked.granted
  }

  get revision(): number {
    return this.#revision
  }

  get size(): number {
    this.#expireDue()
    return this.#live
  }

  /**
   * @internal How many keys the store keeps a place for, tombstones included:
   * at most the live entries plus max(live, MIN_TOMBSTONES) after any commit
   * or expiry (the bound a test checks, as no read can see a tombstone).
   */
  get keptKeys(): number {
    return this.#slots.size
  }

  get(key: string): Entry | undefined {
    checkKey(key)
    const now = this.#expireDue()
    const e = this.#slots.get(key)?.entry
    return e && this.#snapshot(e, now)
  }

  /**
   * A page of the live entries under `prefix`, sorted by key, after the key
   * `after`, at most `limit` of them (all when undefined). O(log n + the
   * page + the tombstones it passes) once the sorted keys are up to date.
   */
  list(prefix: string, after?: string, limit = Infinity): ListPage {
    checkPrefix(prefix)
    const now = this.#expireDue()
    const sorted = this.#index.sorted()
    let i = this.#index.start(prefix, after)
    const entries: Entry[] = []
    for (; i < sorted.length; i++) {
      const key = sorted[i]!
      if (!key.startsWith(prefix)) break
      // Every key of the index has its slot (both drop tombstones together, in #compact).
      const e = this.#slots.get(key)!.entry
      if (e === undefined) continue
      if (entries.length === limit) return { entries, more: true }
      entries.push(this.#snapshot(e, now))
    }
    return { entries, more: false }
  }

  /**
   * Applies a commit (see the adapter contract). `seen`: the highest revision
   * the caller has seen; a store behind it (one that lost its state) moves
   * up to it first, within the contract's limit. `requestId` is not used
   * (a LocalStore keeps no answers; the SQLite store does). With `park`, a
   * commit whose check fails waits in the store and resolves later
   * (parked.ts). Every write hands over: the parked commits it lets through
   * are applied before this returns.
   */
  commit(checks: Check[], ops: Op[], seen?: number): CommitResult
  commit(checks: Check[], ops: Op[], seen: number | undefined, requestId: string | undefined, park: ParkOptions | undefined): CommitResult | Promise<CommitResult>
  commit(checks: Check[], ops: Op[], seen?: number, _requestId?: string, park?: ParkOptions): CommitResult | Promise<CommitResult> {
    checkCommitArgs(checks, ops)
    // Before the checks, so that even a refused commit (an old holder's renewal) lifts a store that lost its state.
    this.#revision = floorRevision(this.#revision, seen)
    const now = this.#expireDue()
    // A turn this commit ends lets what it held back through: tried in this step however the commit ends (parked, written,
    // refused or thrown), not at the next change.
    const ended = park?.order !== undefined && this.#parked.back(park.order)
    let failed: Array<{ key: string; entry: Entry | undefined }> | undefined
    // The slot of the last checked key: a lock's commits check the key they write, so one Map lookup serves both.
    let checkedKey: string | undefined
    let checkedSlot: Slot | undefined
    for (const check of checks) {
      checkedKey = check.key
      checkedSlot = this.#slots.get(check.key)
      const e = checkedSlot?.entry
      if (!holds(check, e)) (failed ??= []).push({ key: check.key, entry: e && this.#snapshot(e, now) })
    }
    if (failed) {
      if (park && park.ms > 0) return this.#parked.park(checks, ops, { ok: false, failed }, park)
      if (ended) this.#parked.changed([])
      return { ok: false, failed }
    }
    // A waiter ahead in line keeps its turn between two parks (parked.ts): wait behind it, with nothing failed.
    if (park?.keep && park.order !== undefined && park.ms > 0 && this.#parked.behindTurn(checks, park.order)) return this.#parked.park(checks, ops, { ok: false, failed: [] }, park)
    let r: Success
    try {
      r = this.#write(ops, now, checkedKey, checkedSlot, undefined)
    } catch (err) {
      if (ended) this.#parked.changed([])
      throw err
    }
    this.#parked.committed(r)
    return r
  }

  /**
   * Writes `ops` as one commit at store time `now` (its checks hold) and
   * answers it. `checkedKey`'s slot is known already (one Map lookup less);
   * `parked`: the tag of a parked commit's try, for the persistence.
   */
  #write(ops: Op[], now: number, checkedKey: string | undefined, checkedSlot: Slot | undefined, parked: unknown): Success {
    const revision = nextRevision(this.#revision)
    const puts: Stored[] = []
    const putSlots: Array<Slot | undefined> = []
    const deletes: string[] = []
    const deleteSlots: Slot[] = []
    for (const op of ops) {
      const slot = op.key === checkedKey ? checkedSlot : this.#slots.get(op.key)
      const existing = slot?.entry
      if (op.type === 'delete') {
        if (existing) {
          deletes.push(op.key)
          deleteSlots.push(slot!)
        }
        continue
      }
      puts.push(written(op, existing, revision, now, copy))
      putSlots.push(slot)
    }
    const sizes = this.#checkQuota(puts, putSlots, deleteSlots)
    this.#persistence?.write(revision, puts, deletes, parked)

    this.#revision = revision
    for (let i = 0; i < deletes.length; i++) {
      this.#empty(deleteSlots[i]!)
      this.#log.append({ type: 'delete', key: deletes[i]!, revision })
    }
    const entries: Entry[] = []
    for (let i = 0; i < puts.length; i++) {
      const e = puts[i]!
      let slot = putSlots[i]
      if (!slot) slot = this.#newSlot(e.key)
      this.#fill(slot, e, sizes?.[i] ?? 0)
      this.#log.appendPut(e, sizes?.[i])
      entries.push(this.#snapshot(e, now))
    }
    this.#compact()
    this.#schedule()
    return { ok: true, revision, entries, deleted: deletes }
  }

  watch(prefix: string, sink: WatchSink, fromRevision?: number): Unsubscribe {
    checkPrefix(prefix)
    this.#expireDue()
    return this.#log.subscribe(prefix, sink, fromRevision)
  }

  /** A page of the history after `after` (see EventLog.read); complete up to the store's revision when nothing more follows. */
  history(prefix: string, after: number, limits: HistoryLimits): HistoryPage {
    this.#expireDue()
    const page = this.#log.read(prefix, after, limits)
    if (!page.more) page.through = Math.max(page.through, this.#revision)
    return page
  }

  /** Stops the expiry timer, answers every parked commit with its first try and ends every watch; the store is not used again. */
  close(): void {
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#parked.closeAll()
    this.#log.closeAll(new ClosedError('the store was closed'))
  }

  /**
   * Deletes every entry whose deadline has passed, each with its own revision
   * and `expire` event; returns the time it used. A store with no revision
   * left expires nothing (reads still work, and show what was there).
   */
  #expireDue(): number {
    const now = this.clock.now()
    let expired: string[] | undefined
    for (let top = this.#expiry.peek(); top !== undefined && top.at <= now && hasRevisionLeft(this.#revision); top = this.#expiry.peek()) {
      // Only live entries are in the heap. Written before it leaves the heap, so a failed write is tried again.
      const key = top.entry!.key
      const revision = this.#revision + 1
      this.#persistence?.write(revision, [], [key])
      this.#revision = revision
      this.#empty(top)
      this.#log.append({ type: 'expire', key, revision })
      ;(expired ??= []).push(key)
    }
    if (expired) {
      this.#compact()
      this.#schedule()
      // An expiry hands over as a commit does.
      this.#parked.changed(expired)
    }
    return now
  }

  /** The failure answer of `checks` at store time `now`. */
  #failure(checks: Check[], now: number): Failure {
    const failed: Failure['failed'] = []
    for (const check of checks) {
      const e = this.#slots.get(check.key)?.entry
      if (!holds(check, e)) failed.push({ key: check.key, entry: e && this.#snapshot(e, now) })
    }
    return { ok: false, failed }
  }

  /** The bytes of each put; throws TOO_LARGE if the commit would grow the entries past the quota. */
  #checkQuota(puts: Stored[], putSlots: Array<Slot | undefined>, deleteSlots: Slot[]): number[] | undefined {
    // A store without a quota (the memory adapter's) counts nothing: a commit pays for no sizes.
    if (!this.#counts) return undefined
    const sizes = puts.map((e) => entryBytes(e.key, e.value, e.owner))
    let grow = 0
    for (let i = 0; i < puts.length; i++) grow += sizes[i]! - (putSlots[i]?.entry ? putSlots[i]!.bytes : 0)
    for (const slot of deleteSlots) grow -= slot.bytes
    const quota = this.#quota
    if (grow > 0 && quota.used + grow > quota.maxBytes) {
      throw new TooLargeError(
        `the store is full: its entries take ${quota.used} of their ${quota.maxBytes} bytes and this commit would add ${grow} (zaris serve --max-store-bytes); delete entries or raise the limit`,
      )
    }
    return sizes
  }

  /** Puts `e` (of `bytes`) in its key's slot, and the slot in (or out of) the expiry heap. */
  #fill(slot: Slot, e: Stored, bytes: number): void {
    if (slot.entry === undefined) this.#live++
    this.#quota.used += bytes - slot.bytes
    slot.bytes = bytes
    slot.entry = e
    if (e.expiresAt !== undefined) {
      slot.at = e.expiresAt
      this.#expiry.update(slot)
    } else this.#expiry.remove(slot)
  }

  /** Deletes a slot's entry, leaving a tombstone (see the module comment for why not `Map.delete`). */
  #empty(slot: Slot): void {
    this.#quota.used -= slot.bytes
    slot.bytes = 0
    slot.entry = undefined
    this.#expiry.remove(slot)
    this.#live--
  }

  /** Drops tombstones once they outnumber the live entries: a rebuild costs O(live) and follows as many deletes, so O(1) amortised. */
  #compact(): void {
    const live = this.#live
    if (this.#slots.size - live <= Math.max(live, MIN_TOMBSTONES)) return
    const slots = new Map<string, Slot>()
    for (const [key, slot] of this.#slots) if (slot.entry !== undefined) slots.set(key, slot)
    this.#slots = slots
    this.#index.retain((key) => slots.has(key))
  }

  /** A slot for a key the Map does not hold yet. */
  #newSlot(key: string): Slot {
    const slot = new Slot()
    this.#slots.set(key, slot)
    this.#index.add(key)
    return slot
  }

  #schedule(retry = false): void {
    const next = this.#expiry.peek()
    if (next === undefined || !hasRevisionLeft(this.#revision)) return
    const now = this.clock.now()
    const at = retry ? now + EXPIRY_RETRY_MS : next.at
    if (at >= this.#timerAt) return
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer)
    this.#timerAt = at
    this.#timer = this.clock.setTimeout(() => {
      this.#timer = undefined
      this.#timerAt = Infinity
      try {
        this.#expireDue()
      } catch {
        // The expiry could not be written (a durable store's disk, say): reads
        // and commits report that; the timer tries again a little later.
        return this.#schedule(true)
      }
      this.#schedule()
    }, at - now)
  }

  #snapshot(e: Stored, now: number): Entry {
    return toEntry(e, now, copy)
  }
}

/** Whether `check` holds on `e`, its key's live entry (or undefined). */
function holds(check: Check, e: Stored | undefined): boolean {
  return 'revision' in check
    ? check.revision === null ? e === undefined : e?.revision === check.revision
    : check.created === null ? e === undefined : e?.created === check.created
}
