/**
 * Watch across processes: every watch of an adapter follows the file's
 * change log (`zaris_file_events`) from a position, and the adapter reads
 * the log when something may have changed:
 *
 * - at once after its own commits (before they are answered);
 * - soon (a microtask) after a commit of another connection of this process;
 * - when the kernel says the file's write-ahead log was written (`fs.watch`
 *   on `<file>-wal`: inotify on Linux, FSEvents on macOS) — another
 *   process's commit, typically under a millisecond after it (and again
 *   a few times in the next ~300 ms: the note can come before the commit
 *   can be seen);
 * - and every {@link POLL_MS} in any case, when SQLite's `data_version` says
 *   another connection committed: the backstop where file-change
 *   notifications do not work (some network and container file systems).
 *
 * A read takes one page of events and the namespace's revision from one
 * snapshot, then delivers them outside the transaction, so a watcher that
 * commits from its callback finds the connection free; a read asked for
 * while one is delivering runs after it, so events stay in order. A watch
 * whose position was pruned from the log (a process stopped while 10 000
 * revisions went by) ends with `CompactedError`, and resumes as any does.
 *
 * @module
 */
import type { FSWatcher } from 'node:fs'
import type { Unsubscribe, WatchEvent, WatchSink } from '../../core/contract/adapter'
import { CompactedError } from '../../core/contract/errors'
import { toEvent, type EventRow } from '../kit/rows'
import { builtin } from './builtins'

const { watch: watchFile } = builtin<typeof import('node:fs')>('node:fs')

/** How often the log is looked at when no notification came, in ms. */
export const POLL_MS = 100
/** After the kernel's note of a write, when to look again, in ms (see Tail's `#noted`: the note can come before its commit can be seen). */
const SETTLE_MS = [1, 4, 16, 64, 256]
/** Events read from the file at a time. */
const PAGE = 500

/** What a tail reads from the file. */
export interface TailSource {
  /** In one snapshot: the namespace's revision, how far its log is pruned, and up to `limit` events after (`revision`, `seq`). */
  read(revision: number, seq: number, limit: number): { revision: number; compacted: number; events: Array<EventRow & { seq: number }> }
  /** Whether another connection committed since this was last asked. */
  changed(): boolean
}

/** Where a tail reads, and how it is woken. */
export interface TailOptions {
  file: string
  /** Whether the kernel's notes that the log was written wake it (fs.watch). */
  notify: boolean
  /** How often it looks at the file in any case, in ms. */
  pollMs: number
}

interface Subscriber {
  prefix: string
  sink: WatchSink
  /** Events at or below this revision are not for this subscriber. */
  after: number
}

/** The tails of this process, by file: a commit on one connection wakes the others at once. */
const tails = new Map<string, Set<Tail>>()

export class Tail {
  readonly #source: TailSource
  readonly #options: TailOptions
  readonly #onActive: (active: boolean) => void
  readonly #onRead: () => void
  readonly #subscribers = new Set<Subscriber>()
  /** The last event read: every event up to it has been delivered; `revision` may be past it (a revision with no events). */
  #revision = 0
  #seq = Number.MAX_SAFE_INTEGER
  #pumping = false
  #again = false
  #watcher: FSWatcher | undefined
  #poll: ReturnType<typeof setInterval> | undefined
  #settle: ReturnType<typeof setTimeout> | undefined
  #settleStep = 0

  /** `onActive`: told when the first watch starts and the last one ends; `onRead`: after each read of the log (deadlines may have changed). */
  constructor(source: TailSource, options: TailOptions, onActive: (active: boolean) => void, onRead: () => void) {
    this.#source = source
    this.#options = options
    this.#onActive = onActive
    this.#onRead = onRead
  }

  /**
   * A watch of `prefix`: from `fromRevision` (replayed from the log first),
   * or from the file's revision now.
   */
  subscribe(prefix: string, sink: WatchSink, fromRevision?: number): Unsubscribe {
    const subscriber: Subscriber = { prefix, sink, after: 0 }
    this.#exclusive((nested) => {
      // The first watch starts where the log ends now. Inside a delivery (a sink that watches) the log is
      // being read already: the new watch starts where that read is.
      if (this.#subscribers.size === 0) [this.#revision, this.#seq] = [this.#source.read(0, 0, 0).revision, Number.MAX_SAFE_INTEGER]
      else if (!nested) this.#catchUp()
      if (fromRevision !== undefined && !this.#replay(subscriber, fromRevision)) return
      // (A revision from the future, which no watcher of this store can have seen, delivers nothing up to it.)
      subscriber.after = Math.max(this.#revision, fromRevision ?? 0)
      this.#subscribers.add(subscriber)
      if (this.#subscribers.size === 1) this.#start()
    })
    return () => {
      if (!this.#subscribers.delete(subscriber)) return
      if (this.#subscribers.size === 0) this.#stop()
    }
  }

  /** Reads the log and delivers what is new (after this process's own commits, and when woken). */
  pump(): void {
    // Nothing to read for nobody (and no timer to set: a store with no watches runs none).
    if (this.#subscribers.size === 0) return
    if (this.#pumping) {
      this.#again = true
      return
    }
    this.#exclusive(() => this.#catchUp())
  }

  /** Ends every watch with `error`. */
  close(error: Error): void {
    const subscribers = [...this.#subscribers]
    this.#subscribers.clear()
    this.#stop()
    for (const s of subscribers) s.sink.error(error)
  }

  /** Runs `fn` (told whether it runs inside a delivery); a pump asked for meanwhile runs after it, never inside it. */
  #exclusive(fn: (nested: boolean) => void): void {
    if (this.#pumping) return fn(true)
    this.#pumping = true
    try {
      fn(false)
      while (this.#again) {
        this.#again = false
        this.#catchUp()
      }
    } finally {
      this.#pumping = false
    }
  }

  /** Delivers to a new subscriber the events after `from` up to where the tail is; false when that history is gone (it was told). */
  #replay(subscriber: Subscriber, from: number): boolean {
    let revision = from
    let seq = Number.MAX_SAFE_INTEGER
    for (;;) {
      const page = this.#source.read(revision, seq, PAGE)
      if (from < page.compacted) {
        subscriber.sink.error(new CompactedError(`watch from revision ${from}: history up to revision ${page.compacted} is gone; read the current state and watch from its revision`))
        return false
      }
      for (const row of page.events) {
        if (row.revision > this.#revision) return true
        if (row.key.startsWith(subscriber.prefix)) deliver(subscriber.sink, toEvent(row))
      }
      if (page.events.length < PAGE) return true
      const last = page.events.at(-1)!
      ;[revision, seq] = [last.revision, last.seq]
    }
  }

  /** Delivers every event after the last one read, page by page. */
  #catchUp(): void {
    // Taken before the read: a commit after this point changes it again, so a wake-up then reads (see schedule).
    this.#source.changed()
    // Until the log is read to its end, or every watch ended meanwhile.
    while (this.#subscribers.size > 0) {
      const page = this.#source.read(this.#revision, this.#seq, PAGE)
      if (this.#revision < page.compacted) {
        // Fell behind the pruned log: nothing can be delivered without a gap.
        this.close(new CompactedError(`the watch fell behind: history up to revision ${page.compacted} is gone; read the current state and watch from its revision`))
        return
      }
      for (const row of page.events) {
        this.#revision = row.revision
        this.#seq = row.seq
        const event = toEvent(row)
        for (const s of this.#subscribers) if (row.revision > s.after && row.key.startsWith(s.prefix)) deliver(s.sink, event)
      }
      // A deadline written or ended by anyone: the expiry timer must know of it (no event, no change).
      if (page.events.length > 0) this.#onRead()
      // (A revision with no events, an empty commit, needs no step: nothing is after it but what comes next.)
      if (page.events.length < PAGE) return
    }
  }

  /**
   * A pump soon, if another connection committed since the last read began
   * (SQLite's data_version): a commit of this process wakes its other tails
   * at once, and the kernel's note of the same commit then costs a pragma,
   * not a read (with 20 adapters in a process, half the reads per commit).
   */
  schedule(): void {
    queueMicrotask(() => this.#look())
  }

  #look(): void {
    if (this.#subscribers.size > 0 && this.#source.changed()) this.pump()
  }

  /**
   * The kernel's note of a write to the log: a look soon, and again after
   * each of {@link SETTLE_MS} until the poll would look anyway. The note can
   * come before its commit can be seen: SQLite publishes a commit in the
   * log's shared-memory index after its last write, and a writer can be put
   * off the CPU between the two. (Seen on a loaded machine: every note of a
   * release came before it was published, and its waiter, polling each
   * minute, slept.) A later note starts the looks over: its commit is the
   * one that may not be seen yet.
   */
  #noted(): void {
    this.schedule()
    this.#settleStep = 0
    this.#settleLater()
  }

  #settleLater(): void {
    clearTimeout(this.#settle)
    this.#settle = undefined
    const ms = SETTLE_MS[this.#settleStep]
    if (ms === undefined || ms >= this.#options.pollMs) return
    this.#settle = setTimeout(() => {
      this.#settleStep++
      this.#look()
      this.#settleLater()
    }, ms)
    this.#settle.unref()
  }

  #start(): void {
    const file = this.#options.file
    let set = tails.get(file)
    if (!set) tails.set(file, (set = new Set()))
    set.add(this)
    this.#listen()
    this.#poll = setInterval(() => {
      if (!this.#watcher) this.#listen()
      if (this.#source.changed()) this.pump()
    }, this.#options.pollMs)
    this.#poll.unref()
    this.#onActive(true)
  }

  #stop(): void {
    // (Started, so in the set: #start put it there, and only this removes it.)
    const set = tails.get(this.#options.file)!
    set.delete(this)
    if (set.size === 0) tails.delete(this.#options.file)
    this.#watcher?.close()
    this.#watcher = undefined
    clearInterval(this.#poll)
    this.#poll = undefined
    clearTimeout(this.#settle)
    this.#settle = undefined
    this.#onActive(false)
  }

  /** Follows writes to the write-ahead log; where that fails, the poll alone. */
  #listen(): void {
    if (!this.#options.notify) return
    try {
      // Closed, and dropped if still the one followed: the next poll listens again.
      const drop = () => {
        watcher.close()
        if (this.#watcher === watcher) this.#watcher = undefined
      }
      const watcher = watchFile(`${this.#options.file}-wal`, { persistent: false }, (type) => {
        // A log replaced (deleted and made again) is followed afresh at the next poll.
        if (type === 'rename') drop()
        this.#noted()
      })
      watcher.on('error', drop)
      this.#watcher = watcher
    } catch {
      // (No log to follow yet: #watcher is unset, so the next poll tries again.)
    }
  }
}

/** Wakes the other tails of this process on `file` (after a commit on one connection). */
export function wakeOthers(file: string, self: Tail): void {
  const set = tails.get(file)
  if (set) for (const t of set) if (t !== self) t.schedule()
}

function deliver(sink: WatchSink, event: WatchEvent): void {
  try {
    sink.event(event)
  } catch {
    // A sink that throws must not stop the others.
  }
}
