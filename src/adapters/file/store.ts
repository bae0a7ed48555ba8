/**
 * One namespace of a `file://` store, through one SQLite connection of this
 * process. Every write is one transaction under SQLite's write lock (see
 * ledger.ts), so the processes of the machine take turns; reads see one
 * snapshot, with entries past their deadline hidden. Watches follow the
 * change log (tail.ts); gone owners are judged as owners.ts says.
 *
 * A transaction that finds the file locked (another process in the middle
 * of a write) is tried again a few milliseconds later, without blocking the
 * event loop, for up to {@link BUSY_LIMIT_MS}; a process stopped in the
 * middle of a write holds every other's writes that long, then they fail
 * with UNAVAILABLE.
 *
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3'
import type { Check, CommitResult, Entry, HistoryLimits, HistoryPage, ListPage, Op, Unsubscribe, WatchEvent, WatchSink } from '../../core/contract/adapter'
import type { Clock, TimerHandle } from '../../core/time/clock'
import { ClosedError, CompactedError, UnavailableError } from '../../core/contract/errors'
import { randomHex } from '../../core/contract/ids'
import { toEvent } from '../kit/rows'
import { hasRevisionLeft, toEntry } from '../kit/write'
import { Checkpointer } from './checkpoint'
import { bootId, thisProcess, type ProcessId } from './machine'
import { Ledger, NeedsSyncError, storedOf } from './ledger'
import { GoneWaiters, SWEEP_MS, Verdicts } from './owners'
import { answerOf, handOver, type ParkRequest } from './parked'
import { keyBytes, pastPrefix, prepare, type OwnerRow, type Statements } from './schema'
import { joinTail, type TailHandle } from './shared-tail'
import type { TailSource } from './tail'
import { FileWaits } from './waits'

/** How long a write waits for another process's, at most, in ms. */
export const BUSY_LIMIT_MS = 10_000
/** Entries in a `list` page when the caller names no limit. */
const PAGE = 1000
/** After a timer's write found the file busy, it is tried again this much later, in ms. */
const RETRY_MS = 50

/** What {@link FileStore} is opened with. */
export interface FileStoreInit {
  db: BetterSqlite3.Database
  file: string
  namespace: string
  /** `full`: every commit synced to disk; `normal`: synced at checkpoints (see ledger.ts). */
  sync: 'normal' | 'full'
  historySize: number
  clock: Clock
  /** This process (a test may name another). */
  self?: ProcessId
  /** Whether a registered process is alive (a test may judge otherwise). */
  alive?: (p: ProcessId, here: ProcessId) => boolean
  /** How long a call waits for another process's write (default {@link BUSY_LIMIT_MS}). */
  busyLimitMs?: number
  /** Whether watches hear of other processes' commits from the kernel (fs.watch), besides the poll. */
  notify: boolean
  /** How often watches poll the file, in ms. */
  pollMs: number
  /** This boot of the machine ('' where unknown; a test may name another). */
  boot?: string
}

export class FileStore {
  readonly file: string
  readonly namespace: string
  /** How long a call waits for another process's write, in ms. */
  readonly busyLimitMs: number
  readonly #db: BetterSqlite3.Database
  readonly #sql: Statements
  readonly #clock: Clock
  readonly #history: number
  readonly #sync: 'normal' | 'full'
  readonly #self: ProcessId
  /** This adapter's name in its registrations. */
  readonly #nonce = randomHex(8)
  readonly #registered = new Set<string>()
  readonly #verdicts: Verdicts
  readonly #waiters: GoneWaiters
  readonly #tail: TailHandle
  readonly #parked: FileWaits
  readonly #checkpoints: Checkpointer
  readonly #tx: BetterSqlite3.Transaction<(fn: () => unknown) => unknown>
  readonly #read: BetterSqlite3.Transaction<(fn: () => unknown) => unknown>
  #synced: boolean | undefined
  #expiry: TimerHandle | undefined
  #sweep: ReturnType<typeof setInterval> | undefined
  #dataVersion: number | undefined
  /** The connection is closed (the last step of close). */
  #closed = false

  constructor(init: FileStoreInit) {
    this.file = init.file
    this.namespace = init.namespace
    this.busyLimitMs = init.busyLimitMs ?? BUSY_LIMIT_MS
    this.#db = init.db
    this.#sql = prepare(init.db)
    this.#clock = init.clock
    this.#history = init.historySize
    this.#sync = init.sync
    this.#self = init.self ?? thisProcess()
    this.#verdicts = new Verdicts(this.#self, init.alive)
    this.#waiters = new GoneWaiters((owner) => this.#lookAt(owner))
    this.#checkpoints = new Checkpointer(init.db)
    this.#tx = init.db.transaction((fn: () => unknown) => fn())
    this.#read = init.db.transaction((fn: () => unknown) => fn())
    this.#tail = joinTail(this.namespace, { file: this.file, notify: init.notify, pollMs: init.pollMs }, this.#clock, `${this.#self.pid}/${this.#self.start}`, {
      source: {
        read: (revision, seq, limit) =>
          this.#read.deferred(() => {
            const space = this.#sql.space.get(this.namespace)!
            return { ...space, events: limit === 0 ? [] : this.#sql.events.all({ ns: this.namespace, revision, seq, limit }) }
          }) as ReturnType<TailSource['read']>,
        changed: () => {
          const v = this.#sql.dataVersion.get()!.data_version
          const changed = v !== this.#dataVersion
          this.#dataVersion = v
          return changed
        },
      },
      activate: (active) => this.#activate(active),
      read: () => this.#scheduleExpiry(),
      lookAt: (owner) => this.#lookAt(owner),
    })
    this.#parked = new FileWaits({
      clock: this.#clock,
      // A wait's write that waited out a busy file past the close finds the connection closed: CLOSED, not SQLite's TypeError.
      write: (fn) => retry(this.file, () => (this.#closed ? closedError() : this.#write(fn)), this.busyLimitMs),
      answer: (id) => answerOf({ sql: this.#sql }, id),
      follow: (sink) => this.#tail.subscribe('', sink),
      watchOwner: (owner, fn) => this.#tail.watchOwner(owner, fn),
    })
    // Synced: after a reboot this moves revisions past the reservation, which must be on disk before any is handed out.
    this.#setSynced(true)
    this.#tx.immediate(() => {
      this.#sql.createSpace.run(this.namespace)
      restartAfterBoot(this.#sql, this.#db, this.file, init.boot ?? bootId(), this.#clock.now())
    })
  }

  /**
   * Runs `fn` in a write transaction: expiries due first, gone owners ended,
   * the keys they freed handed over to parked commits (parked.ts), then
   * `fn` and the handover of what it changed, then the namespace's row
   * where it must change (ledger.ts). Synced when the store
   * says so, or when the transaction raises the reservation (it is run
   * again, synced, if it was not going to be). Throws SQLITE_BUSY as it
   * comes: {@link retry} waits for it.
   */
  #write<T>(fn: (ledger: Ledger) => T): T {
    let synced = this.#sync === 'full'
    for (;;) {
      this.#setSynced(synced)
      try {
        const out = this.#tx.immediate(() => {
          const ledger = new Ledger(this.#sql, this.namespace, this.file, this.#clock.now(), synced, this.#history)
          ledger.expireDue()
          if (this.#verdicts.due(ledger.now)) ledger.endRegistrations(this.#verdicts.gone(this.#sql.owners.all(this.namespace), ledger.now))
          // The line before the caller: a key an expiry freed goes to the first waiter, not to this commit.
          const gone = (nonce: string) => this.#goneBeforeGrant(ledger, nonce)
          handOver(ledger, gone)
          const result = fn(ledger)
          handOver(ledger, gone)
          ledger.finish()
          return result
        }) as T
        this.#afterWrite()
        return out
      } catch (err) {
        // (Only a transaction that was not synced throws it.)
        if (!(err instanceof NeedsSyncError)) throw err
        synced = true
      }
    }
  }

  /**
   * Whether the adapter `nonce`, whose parked commit is about to be granted,
   * stands for a dead process: then its registrations end here (its parked
   * commits dropped, its clients' entries ended, as expiries). An adapter
   * that registered nobody cannot be judged: taken as alive.
   */
  #goneBeforeGrant(ledger: Ledger, nonce: string): boolean {
    const gone = this.#verdicts.goneNow(this.#sql.ownersOfNonce.all(this.namespace, nonce), ledger.now)
    if (gone.length === 0) return false
    ledger.endRegistrations(gone)
    return true
  }

  #setSynced(synced: boolean): void {
    if (synced === this.#synced) return
    this.#db.pragma(`synchronous = ${synced ? 'FULL' : 'NORMAL'}`)
    this.#synced = synced
  }

  /** After a write: this adapter's watches see it now (a deadline it wrote sets the expiry timer), the process's other connections soon. */
  #afterWrite(): void {
    this.#checkpoints.wrote()
    this.#tail.wrote()
  }

  /**
   * Before a read: gone owners are looked for (as often as writes look), and
   * if some are found they are ended first, in a write.
   */
  #beforeRead(): void {
    const now = this.#clock.now()
    if (!this.#verdicts.due(now)) return
    // A dead process stays dead: what was judged here is ended in the write, whoever registered meanwhile.
    const gone = this.#verdicts.gone(this.#sql.owners.all(this.namespace), now)
    if (gone.length > 0) this.#write((ledger) => ledger.endRegistrations(gone))
  }

  /**
   * Runs a read in one snapshot, with the clock read after the snapshot is
   * taken: every commit the read sees was then written at an earlier
   * reading, so no entry shows more time to live than its TTL. (Read before
   * it, a process descheduled between the two readings saw a commit
   * written later than its "now": 30 011 ms left of a 30 s TTL, at load 28.)
   */
  #snapshot<T>(fn: (now: number) => T): T {
    this.#beforeRead()
    return this.#read.deferred(() => {
      this.#sql.space.get(this.namespace)
      return fn(this.#clock.now())
    }) as T
  }

  get(key: string): Entry | undefined {
    return this.#snapshot((now) => {
      const row = this.#sql.entry.get(this.namespace, keyBytes(key))
      if (!row || (row.expires !== null && row.expires <= now)) return undefined
      return toEntry(storedOf(row, this.file, this.namespace), now)
    })
  }

  list(prefix: string, after: string | undefined, limit = PAGE): ListPage {
    return this.#snapshot((now) => this.#page(prefix, after, limit, now))
  }

  #page(prefix: string, after: string | undefined, limit: number, now: number): ListPage {
    const from = keyBytes(prefix)
    const rows = this.#sql.page.all({
      ns: this.namespace,
      from,
      below: pastPrefix(from),
      after: after === undefined ? Buffer.alloc(0) : keyBytes(after),
      now,
      limit: limit + 1,
    })
    const more = rows.length > limit
    return { entries: rows.slice(0, limit).map((r) => toEntry(storedOf(r, this.file, this.namespace), now)), more }
  }

  /** A page of the change log after `after` under `prefix`, cut between revisions at `limits`. */
  history(prefix: string, after: number, limits: HistoryLimits): HistoryPage {
    return this.#read.deferred(() => {
      const space = this.#sql.space.get(this.namespace)!
      if (after < space.compacted) throw new CompactedError(`read from revision ${after}: history up to revision ${space.compacted} is gone; read the current state and watch from its revision`)
      const events: WatchEvent[] = []
      let bytes = 0
      let through = after
      for (const row of this.#sql.events.iterate({ ns: this.namespace, revision: after, seq: Number.MAX_SAFE_INTEGER, limit: -1 })) {
        if (row.revision !== through && (events.length >= limits.maxEvents || bytes >= limits.maxBytes)) return { events, through, more: true }
        through = row.revision
        if (!row.key.startsWith(prefix)) continue
        events.push(toEvent(row))
        bytes += 64 + 2 * (row.key.length + (row.value?.length ?? 0))
      }
      return { events, through: Math.max(through, space.revision), more: false }
    }) as HistoryPage
  }

  commit(checks: Check[], ops: Op[], requestId: string | undefined): CommitResult {
    return this.#write((ledger) => {
      if (requestId !== undefined) {
        const done = this.#sql.request.get(this.namespace, requestId)
        if (done) return ledger.answer(done.revision)
      }
      return ledger.commit(checks, ops, requestId)
    })
  }

  /** A commit that may park (capability `handover`): see parked.ts and waits.ts. */
  park(req: Omit<ParkRequest, 'nonce'>, signal: AbortSignal | undefined, onParked: (() => void) | undefined): Promise<CommitResult> {
    return this.#parked.commit({ ...req, nonce: this.#nonce }, signal, onParked)
  }

  watch(prefix: string, sink: WatchSink, fromRevision: number | undefined): Unsubscribe {
    return this.#tail.subscribe(prefix, sink, fromRevision)
  }

  /** Registers client `owner` as served by this adapter, in this process; the ends of its earlier, gone registrations first. */
  register(owner: string): void {
    this.#write((ledger) => {
      ledger.endRegistrations(this.#verdicts.gone(this.#sql.ownersOf.all(this.namespace, owner), ledger.now, true))
      this.#sql.register.run(this.namespace, owner, this.#nonce, this.#self.pid, this.#self.start, this.#self.host)
    })
    this.#registered.add(owner)
  }

  /** Resolves once `owner` is gone, and its entries ended. */
  ownerGone(owner: string, signal: AbortSignal): Promise<void> {
    return this.#waiters.wait(owner, signal)
  }

  /**
   * Whether `owner` is gone: no registration of it stands for a live
   * adapter (those that stood for dead processes are ended now). A client
   * id with no registration at all is gone too, as for IndexedDB: every
   * client of this store registers before its first write, so an owned
   * entry with no registration behind it was left by a client that is gone
   * (or written by hand), and a waiter may take it over.
   */
  #lookAt(owner: string): boolean {
    const gone = this.#verdicts.gone(this.#sql.ownersOf.all(this.namespace, owner), this.#clock.now(), true)
    if (gone.length > 0) this.#write((ledger) => ledger.endRegistrations(gone))
    // A registration made meanwhile (the id reused by a new client) keeps it alive.
    return this.#sql.registrationsOf.get(this.namespace, owner)!.n === 0
  }

  /** Watches open (or all closed): the expiry timer and the sweep for gone owners run while any is. */
  #activate(active: boolean): void {
    this.#clock.clearTimeout(this.#expiry as TimerHandle)
    this.#expiry = undefined
    clearInterval(this.#sweep)
    if (!active) return
    this.#sweep = setInterval(() => this.#guard(() => this.#beforeRead()), SWEEP_MS)
    this.#sweep.unref()
    this.#scheduleExpiry()
  }

  /**
   * The timer for the earliest deadline in the namespace, whoever wrote it
   * (set again after every read of the log): its expiry is written then,
   * and watchers told. None while no watch is open, or for a store with no
   * revision left to give it.
   */
  #scheduleExpiry(): void {
    this.#clock.clearTimeout(this.#expiry as TimerHandle)
    this.#expiry = undefined
    // (Not once the last watch ended: that can happen inside the read that set this timer.)
    if (!this.#tail.leading) return
    const at = this.#sql.nextExpiry.get(this.namespace)!.at
    if (at === null || !hasRevisionLeft(this.#sql.space.get(this.namespace)!.revision)) return
    this.#expiry = this.#clock.setTimeout(() => {
      this.#expiry = undefined
      // Written by this write (the next timer is set when its events are read), or by another process first.
      // The file busy or failing: looked at again a little later (readers hide the entry meanwhile).
      if (!this.#guard(() => this.#write(() => undefined))) this.#expiry = this.#clock.setTimeout(() => this.#guard(() => this.#scheduleExpiry()), RETRY_MS)
      // A timer can fire before the deadline by this clock (Node counts from its loop's cached time): then the
      // write expired nothing, no event is read to set the next timer, and the entry would never expire. Set it here.
      else if (this.#expiry === undefined) this.#guard(() => this.#scheduleExpiry())
    }, at - this.#clock.now() + 1)
  }

  /** Runs timer work; false when the file was busy or failing (or is closed). */
  #guard(fn: () => unknown): boolean {
    try {
      fn()
    } catch {
      return false
    }
    return true
  }

  /** Ends this adapter's registrations (its clients' holds end, as a gone process's do) and its watches; closes the connection. */
  async close(): Promise<void> {
    this.#waiters.close()
    await this.#parked.close()
    this.#checkpoints.close()
    this.#tail.close(new ClosedError('the file adapter was closed'))
    const mine: OwnerRow[] = [...this.#registered].map((owner) => ({ owner, nonce: this.#nonce, ...this.#self }))
    try {
      if (mine.length > 0) await retry(this.file, () => this.#write((ledger) => ledger.endRegistrations(mine)), this.busyLimitMs)
    } catch {
      // The file is failing: this process's registrations end when it does.
    }
    this.#closed = true
    this.#db.close()
  }
}

function closedError(): never {
  throw new ClosedError('the file adapter was closed')
}

/**
 * After a reboot of the machine (another boot id in the file; where the
 * system has none, the monotonic clock found behind the file's latest
 * reading): every namespace continues from its reserved revision (commits
 * after the last sync may be lost), every TTL starts again whole (the clock
 * restarted), and, where boots are known, the old boot's processes are all
 * gone: their registrations end, with their owners' entries.
 */
function restartAfterBoot(sql: Statements, db: BetterSqlite3.Database, file: string, boot: string, now: number): void {
  const stored = (db.prepare(`SELECT value FROM zaris_file_meta WHERE name = 'boot'`).get() as { value: string } | undefined)?.value
  // (A file that holds no namespace yet has no reading: max() is NULL, and no clock is behind it.)
  const latest = (db.prepare('SELECT max(clock) AS at FROM zaris_file_spaces').get() as { at: number | null }).at!
  const rebooted = stored !== undefined && (boot !== '' ? stored !== boot : now < latest - 1000)
  db.prepare(`INSERT INTO zaris_file_meta (name, value) VALUES ('boot', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`).run(boot)
  if (!rebooted) return
  // Every waiter was of the old boot, and its deadline on the old clock.
  db.exec('DELETE FROM zaris_file_parked_keys; DELETE FROM zaris_file_parked')
  db.prepare('UPDATE zaris_file_spaces SET revision = max(revision, reserved), clock = ?').run(now)
  db.prepare('UPDATE zaris_file_entries SET expires = ? + ttl WHERE ttl IS NOT NULL').run(now)
  // Where boots are not known, neither are the old boot's processes: each is judged by its pid, as ever.
  if (boot === '') return
  for (const { ns } of db.prepare('SELECT ns FROM zaris_file_spaces').all() as Array<{ ns: string }>) {
    const ledger = new Ledger(sql, ns, file, now, true, Infinity)
    ledger.endRegistrations(sql.owners.all(ns).filter((r) => !r.host.startsWith(`${boot}/`)))
    ledger.finish()
  }
}

/**
 * Runs `op` until it does not find the file locked by another process's
 * write, waiting a few ms between tries (never blocking the event loop
 * longer than SQLite's own short busy timeout); after {@link BUSY_LIMIT_MS}
 * it fails with UNAVAILABLE. Other SQLite failures (disk full, I/O, a
 * damaged file) are UNAVAILABLE too, naming the file.
 */
export async function retry<T>(file: string, op: () => T, limitMs = BUSY_LIMIT_MS): Promise<T> {
  const deadline = performance.now() + limitMs
  for (let attempt = 0; ; attempt++) {
    try {
      return op()
    } catch (err) {
      const code = String((err as { code?: unknown }).code ?? '')
      if (!code.startsWith('SQLITE_')) throw err
      if (!code.startsWith('SQLITE_BUSY') || performance.now() > deadline) {
        throw new UnavailableError(
          code.startsWith('SQLITE_BUSY')
            ? `${file} stayed locked by another process's write for ${limitMs} ms (a process stopped in the middle of a write holds it)`
            : `${file}: ${(err as Error).message} (${code})`,
          { cause: err },
        )
      }
      await new Promise((r) => setTimeout(r, Math.min(20, 1 + attempt) * (0.5 + Math.random())))
    }
  }
}


