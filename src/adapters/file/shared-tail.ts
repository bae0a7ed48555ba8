/**
 * The adapters of one process on one namespace of a file share one tail
 * (tail.ts): one read of the log per commit for the process, not one per
 * adapter. Sixteen adapters contending for a lock in one process read each
 * commit once instead of sixteen times; a process with one adapter is as
 * before.
 *
 * The first adapter to join leads: the tail reads through its connection,
 * and its timers (the earliest deadline's expiry, the sweep for gone
 * owners) run while the tail is active, for every adapter of the namespace.
 * When the leader closes, the next adapter leads. Adapters that wake or
 * time differently (`notify`, `pollMs`, their clock, the process they stand
 * for: tests) share only with their own kind. Each adapter's watches end with its close, not another's.
 *
 * @module
 */
import type { Unsubscribe, WatchSink } from '../../core/contract/adapter'
import type { Clock } from '../../core/time/clock'
import { OWNER_POLL_MS } from './owners'
import { Tail, wakeOthers, type TailOptions, type TailSource } from './tail'

/** An adapter on a shared tail. */
export interface TailMember {
  source: TailSource
  /** Told, while it leads, when the tail becomes active or idle (its timers run while active). */
  activate(active: boolean): void
  /** Told, while it leads, after each read of the log that found events (deadlines may have changed). */
  read(): void
  /** Whether client `owner` is gone (its entries ended, in a write, if it just was found so); throws when the file is busy. */
  lookAt(owner: string): boolean
}

/** One adapter's view of its namespace's shared tail. */
export interface TailHandle {
  /** Whether the tail is active and this adapter leads (its timers should run). */
  readonly leading: boolean
  subscribe(prefix: string, sink: WatchSink, fromRevision?: number): Unsubscribe
  /** Reads the log now (after this adapter's own commit) and wakes the process's other tails on the file. */
  wrote(): void
  /**
   * Calls `fn` once client `owner` is gone and its entries ended: one look
   * every {@link OWNER_POLL_MS} for the process, however many of its
   * adapters wait behind the same holder (through the leader's connection).
   * Returns what stops it.
   */
  watchOwner(owner: string, fn: () => void): () => void
  /** Leaves: this adapter's watches end with `error`; the next adapter leads. */
  close(error: Error): void
}

class SharedTail {
  readonly tail: Tail
  readonly members: TailMember[] = []
  // (With no member left, the look throws: #poll takes that as not gone.)
  readonly looks = new OwnerLooks((owner) => this.members[0]!.lookAt(owner))
  active = false

  constructor(
    options: TailOptions,
    readonly key: string,
  ) {
    this.tail = new Tail(
      {
        read: (revision, seq, limit) => this.members[0]!.source.read(revision, seq, limit),
        changed: () => this.members[0]!.source.changed(),
      },
      options,
      (active) => {
        this.active = active
        this.members[0]!.activate(active)
      },
      () => this.members[0]!.read(),
    )
  }
}

/** Owners looked at for the waits of a process (see {@link TailHandle.watchOwner}). */
class OwnerLooks {
  readonly #watchers = new Map<string, Set<() => void>>()
  #timer: ReturnType<typeof setInterval> | undefined

  constructor(readonly look: (owner: string) => boolean) {}

  add(owner: string, fn: () => void): () => void {
    let set = this.#watchers.get(owner)
    if (!set) {
      this.#watchers.set(owner, (set = new Set()))
      // A first look at once: a holder dead a while ends the wait now.
      queueMicrotask(() => this.#poll(owner))
    }
    set.add(fn)
    if (!this.#timer) {
      this.#timer = setInterval(() => this.#poll(), OWNER_POLL_MS)
      this.#timer.unref()
    }
    const watchers = set
    return () => {
      if (watchers.delete(fn) && watchers.size === 0 && this.#watchers.get(owner) === watchers) this.#watchers.delete(owner)
      if (this.#watchers.size === 0) this.close()
    }
  }

  close(): void {
    this.#watchers.clear()
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  #poll(only?: string): void {
    for (const owner of only === undefined ? [...this.#watchers.keys()] : [only]) {
      const watchers = this.#watchers.get(owner)
      if (!watchers) continue
      let gone = false
      try {
        gone = this.look(owner)
      } catch {
        // The file is busy or failing: looked at again at the next poll.
      }
      if (!gone) continue
      this.#watchers.delete(owner)
      for (const fn of watchers) fn()
    }
    if (this.#watchers.size === 0) this.close()
  }
}

const shared = new Map<string, SharedTail>()
const clockIds = new WeakMap<Clock, number>()
let clocks = 0

/**
 * Joins (or starts) the shared tail of `namespace` in `options.file` for
 * adapters like this one, of process `self` (a test may make adapters stand
 * for other processes: those share nothing, as real ones could not).
 */
export function joinTail(namespace: string, options: TailOptions, clock: Clock, self: string, member: TailMember): TailHandle {
  if (!clockIds.has(clock)) clockIds.set(clock, ++clocks)
  const key = [options.file, namespace, options.notify, options.pollMs, clockIds.get(clock), self].join('\u0000')
  let s = shared.get(key)
  if (!s) shared.set(key, (s = new SharedTail(options, key)))
  const group = s
  group.members.push(member)
  // This adapter's watches (each forgotten when the tail ends it: a watch that fell behind the log).
  const mine = new Set<{ sink: WatchSink; off: Unsubscribe }>()
  let closed = false
  return {
    get leading() {
      return group.active && group.members[0] === member
    },
    subscribe(prefix, sink, fromRevision) {
      // Asked by a sink its close ends (the waits of a commit still being sent follow again): opened, it would
      // keep the tail reading through a member that is gone.
      if (closed) return () => {}
      const watch = { sink, off: () => {} }
      mine.add(watch)
      watch.off = group.tail.subscribe(prefix, { event: (e) => sink.event(e), error: (err) => (mine.delete(watch), sink.error(err)) }, fromRevision)
      return () => {
        mine.delete(watch)
        watch.off()
      }
    },
    watchOwner(owner, fn) {
      return group.looks.add(owner, fn)
    },
    wrote() {
      group.tail.pump()
      wakeOthers(options.file, group.tail)
    },
    close(error) {
      closed = true
      for (const watch of [...mine]) {
        mine.delete(watch)
        watch.off()
        watch.sink.error(error)
      }
      // (Called once: the store's close runs once.)
      const at = group.members.indexOf(member)
      group.members.splice(at, 1)
      if (group.members.length === 0) {
        group.looks.close()
        shared.delete(group.key)
      }
      // The leader's timers stop with it; the next adapter's start, if the tail is still active.
      if (at === 0 && group.active) {
        member.activate(false)
        group.members[0]!.activate(true)
      }
    },
  }
}
