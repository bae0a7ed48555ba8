/**
 * One namespace on one shared connection: runs the scripts with the
 * namespace's keys, follows its log for watchers, and keeps the timer that
 * makes expiry events arrive when nobody reads or writes. Every adapter of
 * the process on that namespace and connection uses the same one.
 *
 * @module
 */
import type { Unsubscribe, WatchSink } from '../../core/contract/adapter'
import { systemClock, type TimerHandle } from '../../core/time/clock'
import { LOG_KEY_INDEX, namespaceKeys, type LogEntry, type RawLogEntry } from './codec'
import type { RedisLink } from './link'
import { SocketHold, type SharedConnection } from './connection'
import { Follower } from './follower'
import { redisError } from './load'
import { ParkedAnswers } from './parked'
import type { ScriptName } from './scripts'

/** The scripts whose reply starts with a status (then Redis's time, then the microseconds to the next deadline). */
const COMMITS: ReadonlySet<ScriptName> = new Set(['commit', 'add', 'lock', 'unpark'])

/** Due entries one script expires at most before its own work (the rest: the next script, or when touched). */
const SWEEP_LIMIT = 500

export interface SpaceOptions {
  historySize: number
}

export class Space {
  readonly #connection: SharedConnection
  readonly #keys: string[]
  readonly #history: number
  readonly #follower: Follower
  /** Removes this space from its connection once the last adapter let it go. */
  readonly #forget: () => void
  #reader: RedisLink | undefined
  #readerHold: SocketHold | undefined
  #users = 0
  #closed = false
  /** The highest revision seen here; the store's revision is never let fall below it. */
  #seen = 0
  #timer: TimerHandle | undefined
  #timerAt = Infinity
  readonly #namespace: string
  #parked: ParkedAnswers | undefined

  /** The namespace's state on `connection`, created on first use. */
  static of(connection: SharedConnection, namespace: string, options: SpaceOptions): Space {
    const key = `${namespace}\u0000${options.historySize}`
    let space = connection.spaces.get(key) as Space | undefined
    if (!space) {
      space = new Space(connection, namespace, options, () => connection.spaces.delete(key))
      connection.spaces.set(key, space)
    }
    space.#users++
    return space
  }

  private constructor(connection: SharedConnection, namespace: string, options: SpaceOptions, forget: () => void) {
    this.#connection = connection
    this.#namespace = namespace
    this.#forget = forget
    this.#keys = namespaceKeys(namespace)
    this.#history = options.historySize
    this.#follower = new Follower({
      replay: async (startId, count) => {
        const r = (await this.script('watch', 'replay', startId, count)) as [string, string, unknown, RawLogEntry[], unknown]
        const revision = Number(r[2])
        this.see(revision)
        return { revision, epoch: String(r[4] ?? ''), entries: r[3] ?? [] }
      },
      read: async (afterId, count, blockMs) => {
        return (await this.#readerLink().xread(this.#keys[LOG_KEY_INDEX]!, afterId, count, blockMs)) as RawLogEntry[] | null
      },
      revision: async () => Number((await this.#readerLink().call(this.#keys[0]!, ['HGET', this.#keys[0]!, 'n'])) ?? 0),
      saw: (entry) => this.#saw(entry),
      active: (active) => {
        this.#readerHold?.[active ? 'hold' : 'release']()
        // Learn the earliest deadline now: entries written before anyone watched need their expiry events too.
        if (active) void this.#expireDue()
        else this.#clearTimer()
      },
    })
  }

  /** Runs a script with the namespace's keys and the common arguments. */
  async script(what: string, name: ScriptName, ...args: Array<string | number>): Promise<unknown[]> {
    const hold = this.#connection.hold
    hold.hold()
    try {
      const reply = (await this.#connection.scripts.run(name, [...this.#keys, this.#history, SWEEP_LIMIT, this.#seen, ...args])) as unknown[]
      const nextIn = Number(reply[COMMITS.has(name) ? 2 : 1])
      if (nextIn >= 0) this.#schedule(nextIn / 1000)
      return reply
    } catch (err) {
      throw redisError(err, what)
    } finally {
      hold.release()
    }
  }

  watch(prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe> {
    return this.#follower.subscribe(prefix, sink, fromRevision)
  }

  /** Where this namespace's parked commits are answered (made on the first that may park). */
  get parked(): ParkedAnswers {
    this.#parked ??= new ParkedAnswers(this.#connection, this.#namespace)
    return this.#parked
  }

  see(revision: number): void {
    if (revision > this.#seen) this.#seen = revision
  }

  /** One adapter is done with this namespace; the last one stops its reader and timer. */
  release(): void {
    if (--this.#users > 0) return
    this.#closed = true
    this.#forget()
    this.#clearTimer()
    this.#follower.close()
    this.#reader?.destroy()
    this.#parked?.close()
  }

  #readerLink(): RedisLink {
    if (!this.#reader) {
      // A connection of its own: XREAD BLOCK holds up every other command on its connection.
      // It waits through outages rather than failing, since its reads resume from a cursor.
      const reader = this.#connection.link.duplicate()
      this.#reader = reader
      reader.onBreak(() => this.#follower.reconnecting())
      if (this.#connection.owned) {
        this.#readerHold = new SocketHold(reader)
        if (this.#follower.size > 0) this.#readerHold.hold()
      }
    }
    return this.#reader
  }

  #saw(entry: LogEntry): void {
    this.see(entry.id.rev)
    const ttl = entry.event?.ttl
    // Another client wrote an entry with a TTL: make sure the watchers here hear of its expiry.
    if (ttl !== undefined) this.#schedule(ttl)
  }

  /** Runs the expiry script in `ms` (or sooner, if it is already due sooner), while someone watches. */
  #schedule(ms: number): void {
    if (this.#closed || this.#follower.size === 0) return
    // +1 ms: the timer must not fire before the deadline has passed on Redis's clock.
    const delay = Math.ceil(ms) + 1
    const at = systemClock.now() + delay
    if (at >= this.#timerAt) return
    this.#clearTimer()
    this.#timerAt = at
    this.#timer = systemClock.setTimeout(() => {
      this.#timer = undefined
      this.#timerAt = Infinity
      void this.#expireDue()
    }, delay)
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) systemClock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#timerAt = Infinity
  }

  async #expireDue(): Promise<void> {
    if (this.#closed || this.#follower.size === 0) return
    try {
      await this.script('expire', 'expire')
    } catch {
      // Redis is unreachable: try again soon, the watchers still wait for their events.
      this.#schedule(1_000)
    }
  }
}
