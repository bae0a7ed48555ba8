/**
 * When the write-ahead log is copied into the file (a checkpoint), off the
 * commits' path. A checkpoint syncs the log and the file to disk (two
 * fsyncs, milliseconds on a disk); SQLite's default runs one inside the
 * commit that takes the log past 1 000 pages, which at ~10 pages per
 * acquire + release is one cycle in a hundred paying it: the p99.
 *
 * Here:
 * - every {@link CHECKPOINT_MS}, a timer of each adapter that wrote since its
 *   last one runs a PASSIVE checkpoint (it copies what no reader still
 *   needs, waits for no one, and costs nothing when the log holds nothing
 *   new): an idle store's last commits reach the disk within that time;
 * - the log is bounded at {@link CHECKPOINT_PAGES} pages (16 MiB at SQLite's
 *   4 KiB pages): a commit that takes it past runs the checkpoint itself
 *   (SQLite's `wal_autocheckpoint`), so a process writing faster than the
 *   timer does not grow it without end; one cycle in ~400 pays that;
 * - `journal_size_limit` cuts the log file back to that bound after it
 *   restarts, should a reader that held a snapshot have let it grow past.
 *
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3'

/** How often an adapter that wrote checkpoints the log, in ms. */
export const CHECKPOINT_MS = 1000
/** Pages in the log at which the committing connection checkpoints it. */
export const CHECKPOINT_PAGES = 4000

/** Sets a connection's checkpoint pragmas (see the module's comment). */
export function boundLog(db: BetterSqlite3.Database): void {
  db.pragma(`wal_autocheckpoint = ${CHECKPOINT_PAGES}`)
  db.pragma(`journal_size_limit = ${CHECKPOINT_PAGES * 4096}`)
}

/** One adapter's checkpoint timer: armed by a write, it checkpoints once and rests until the next. */
export class Checkpointer {
  readonly #db: BetterSqlite3.Database
  #timer: ReturnType<typeof setTimeout> | undefined
  #closed = false

  constructor(db: BetterSqlite3.Database) {
    this.#db = db
  }

  /** After a write: a checkpoint within {@link CHECKPOINT_MS}. */
  wrote(): void {
    if (this.#timer !== undefined || this.#closed) return
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      try {
        this.#db.pragma('wal_checkpoint(PASSIVE)')
      } catch {
        // Busy (another process checkpoints) or failing: the next write arms it again, and the bound holds meanwhile.
      }
    }, CHECKPOINT_MS)
    this.#timer.unref()
  }

  /** No more checkpoints (the connection is closing: SQLite checkpoints as the last connection closes). */
  close(): void {
    this.#closed = true
    clearTimeout(this.#timer)
    this.#timer = undefined
  }
}
