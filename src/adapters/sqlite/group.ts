/**
 * Group commit: commits made while a SQLite transaction is open join it, and
 * it is committed on the next turn of the event loop (or before anything
 * reads), so many commits cost one fsync. Nothing in a group is
 * acknowledged, or shown to a watch, before it is on disk: watches get their
 * events through a {@link GatedSink}, which holds them until then.
 *
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3'
import type { WatchEvent, WatchSink } from '../../core/contract/adapter'
import { UnavailableError } from '../../core/contract/errors'
import type { Statements } from './schema'

/** Commits written together in one SQLite transaction, hence one fsync. */
export interface Group {
  namespaces: Set<string>
  commits: number
  /** Watch deliveries held until the group is on disk, in order. */
  held: Array<() => void>
  done: Promise<void>
  resolve: () => void
  reject: (err: Error) => void
  failed?: UnavailableError
}

/** What the store does around a group's commit. */
export interface GroupHooks {
  /** Just before the transaction is committed (housekeeping; a throw fails the group). */
  beforeSync(group: Group): void
  /** The group did not reach the disk: memory must again hold only what is on disk. */
  failed(group: Group, error: UnavailableError): void
}

/** The open group of one file, if any, and how it ends. */
export class GroupCommit {
  readonly #db: BetterSqlite3.Database
  readonly #sql: Statements
  readonly #hooks: GroupHooks
  #group: Group | undefined

  constructor(db: BetterSqlite3.Database, sql: Statements, hooks: GroupHooks) {
    this.#db = db
    this.#sql = sql
    this.#hooks = hooks
  }

  /** The group open now. */
  get current(): Group | undefined {
    return this.#group
  }

  /** The open group, opened if there is none. */
  begin(): Group {
    if (this.#group) return this.#group
    this.#sql.begin.run()
    let resolve!: () => void
    let reject!: (err: Error) => void
    const done = new Promise<void>((res, rej) => {
      resolve = res
      reject = rej
    })
    done.catch(() => {}) // a group nobody waits on (expiries only) must not be an unhandled rejection
    const group: Group = { namespaces: new Set(), commits: 0, held: [], done, resolve, reject }
    this.#group = group
    setImmediate(() => this.flush(group))
    return group
  }

  /** A watch delivery: now if no group is open, else once the open one is on disk. */
  hold(deliver: () => void): void {
    if (this.#group) this.#group.held.push(deliver)
    else deliver()
  }

  /** Commits the open group (one fsync), then tells its watches and its commits. */
  flush(group = this.#group): void {
    if (group === undefined || group !== this.#group) return
    this.#group = undefined
    try {
      this.#hooks.beforeSync(group)
      this.#sql.commit.run()
    } catch (err) {
      this.fail(group, err)
      return
    }
    for (const deliver of group.held) {
      try {
        deliver()
      } catch {
        // A sink that throws must not stop the others.
      }
    }
    group.held = []
    group.resolve()
  }

  /** {@link flush}, then throws if the group failed. */
  flushOrThrow(): void {
    const group = this.#group
    this.flush()
    if (group?.failed) throw group.failed
  }

  /**
   * A group that did not reach the disk: its commits fail and its held
   * events are dropped; the hooks reload what it wrote.
   */
  fail(group: Group, err: unknown): void {
    if (group.failed) return
    const error = new UnavailableError(`the node could not write its data file: ${(err as Error).message}`, { cause: err })
    group.failed = error
    if (this.#group === group) this.#group = undefined
    try {
      if (this.#db.inTransaction) this.#sql.rollback.run()
    } catch {
      // Already rolled back by SQLite.
    }
    group.held = []
    this.#hooks.failed(group, error)
    group.reject(error)
  }
}

/** A watch's sink that holds deliveries while a group is not yet on disk. */
export class GatedSink implements WatchSink {
  #dead = false
  constructor(
    readonly sink: WatchSink,
    readonly hold: (deliver: () => void) => void,
  ) {}
  event(ev: WatchEvent): void {
    if (!this.#dead) this.hold(() => !this.#dead && this.sink.event(ev))
  }
  error(err: Error): void {
    if (!this.#dead) this.hold(() => this.kill(err))
  }
  /** Ends the watch now with `err`; nothing more is delivered. */
  kill(err: Error): void {
    if (this.#dead) return
    this.#dead = true
    this.sink.error(err)
  }
}
