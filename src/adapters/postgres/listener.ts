/**
 * LISTEN/NOTIFY for the watches of one schema on one connection: a client of
 * its own (LISTEN needs a session, which a pooled connection is not) that
 * wakes the namespace's follower when a commit notifies.
 *
 * A notification only makes a follower read sooner; a follower reads on its
 * poll interval anyway. Whether notifications arrive at all is found out,
 * not assumed: after LISTEN the listener sends a notification through the
 * pool (its payload empty, which names no namespace), and counts as working
 * once any notification arrives within a second. Behind a pooler in
 * transaction mode (PgBouncer) the session that ran LISTEN is handed to
 * others and nothing arrives: the followers then poll at their short
 * interval. A broken connection is opened again, with the same probe.
 *
 * @module
 */
import { systemClock, type TimerHandle } from '../../core/time/clock'
import type { Connection } from './connection'
import { socketOf, type PgClient } from './load'
import { channelOf } from './sql'

/** How long the probe may take to come back before notifications count as not arriving. */
const PROBE_MS = 1_000
/** How long the listener stays after its last follower left, for the next one. */
const LINGER_MS = 2_000

export class Listener {
  readonly #connection: Connection
  readonly #schema: string
  /** Where the LISTEN connection goes; false: nowhere (the adapter said `listen: false`, or the caller's pool does not say). */
  readonly #options: Record<string, unknown> | false
  /** The wake of each followed namespace: its one follower on this connection (follower.ts). */
  readonly #followers = new Map<string, () => void>()
  /** Who hears the answers of each namespace's parked commits (parked.ts), each adapter's own. */
  readonly #answers = new Map<string, Set<(answer: string) => void>>()
  #client: PgClient | undefined
  #opening = false
  #working = false
  /** Set while a probe waits: any notification means notifications arrive. */
  #heard: (() => void) | undefined
  #failures = 0
  #idleTimer: ReturnType<typeof systemClock.setTimeout> | undefined

  /**
   * The schema's listener on `connection` (`options`: where it connects;
   * false: none), one per kind: adapters of one pool that ask differently
   * (`listen: false`, a URL of its own) each get what they asked for.
   */
  static of(connection: Connection, schema: string, options: Record<string, unknown> | false | undefined): Listener {
    const key = `listener\u0000${schema}\u0000${JSON.stringify(options)}`
    let listener = connection.spaces.get(key) as Listener | undefined
    if (!listener) connection.spaces.set(key, (listener = new Listener(connection, schema, options ?? connection.listenOptions ?? false)))
    return listener
  }

  private constructor(connection: Connection, schema: string, options: Record<string, unknown> | false) {
    this.#connection = connection
    this.#schema = schema
    this.#options = options
  }

  /** Whether notifications are known to arrive now. */
  get working(): boolean {
    return this.#working
  }

  /**
   * Calls `wake` on every notification of `namespace` until the returned
   * function is called. One follower per namespace and connection follows
   * (index.ts, followerOf).
   */
  follow(namespace: string, wake: () => void): () => void {
    this.#followers.set(namespace, wake)
    this.#stopLinger()
    this.#open()
    return () => {
      this.#followers.delete(namespace)
      if (this.#users() === 0) this.#idle()
    }
  }

  /**
   * Calls `hear` with every parked commit's answer sent on `namespace` (the
   * notification's payload after the namespace: `<id> <now> [<answer>]`,
   * sql/park.ts) until the returned function is called.
   */
  hearAnswers(namespace: string, hear: (answer: string) => void): () => void {
    let set = this.#answers.get(namespace)
    if (!set) this.#answers.set(namespace, (set = new Set()))
    set.add(hear)
    this.#stopLinger()
    this.#open()
    return () => {
      if (!set.delete(hear)) return
      if (set.size === 0 && this.#answers.get(namespace) === set) this.#answers.delete(namespace)
      if (this.#users() === 0) this.#idle()
    }
  }

  #users(): number {
    return this.#followers.size + this.#answers.size
  }

  #open(): void {
    if (this.#client || this.#opening || !this.#options || this.#users() === 0) return
    this.#opening = true
    void this.#connect().finally(() => (this.#opening = false))
  }

  async #connect(): Promise<void> {
    const client = new this.#connection.pg.Client({ ...this.#options, application_name: 'zaris listen' })
    let lost = false
    const onLost = () => {
      if (lost) return
      lost = true
      this.#working = false
      if (this.#client === client) this.#client = undefined
      void client.end().catch(() => {})
      this.#retry()
    }
    // Also when the connection ends unasked (node-postgres then emits 'error', maybe twice).
    client.on('error', onLost)
    client.on('notification', (msg) => this.#notified(msg.payload))
    try {
      await client.connect()
      // The idle LISTEN socket must not keep Node running: a watch keeps the process alive by itself.
      socketOf(client)?.unref()
      await client.query(`LISTEN "${channelOf(this.#schema)}"`)
      this.#client = client
      this.#failures = 0
      // Nobody follows any more (the last left while it opened, or close() came): not kept, also
      // through the rest of a linger, which only ends a connection that is there.
      if (this.#users() === 0) return this.#end()
      await this.#check()
    } catch {
      onLost()
      return
    }
    // Anything written before LISTEN took effect is read now.
    for (const wake of this.#followers.values()) wake()
  }

  /** Sends a notification through the pool; working once one arrives. */
  async #check(): Promise<void> {
    const arrived = new Promise<boolean>((resolve) => {
      this.#heard = () => resolve(true)
      systemClock.setTimeout(() => resolve(false), PROBE_MS)
    })
    await this.#connection.query('listen', 'SELECT pg_notify($1, $2)', [channelOf(this.#schema), ''], PROBE_MS)
    this.#working = await arrived
    this.#heard = undefined
  }

  /** A payload is a namespace (a commit there), or a namespace, a space and a parked commit's answer. */
  #notified(payload: string): void {
    this.#heard?.()
    const space = payload.indexOf(' ')
    if (space < 0) return this.#followers.get(payload)?.()
    const answer = payload.slice(space + 1)
    for (const hear of this.#answers.get(payload.slice(0, space)) ?? []) hear(answer)
  }

  /** Opens the connection again after a backoff, if anyone follows by then (see #open). */
  #retry(): void {
    const delay = Math.min(5_000, 100 * 2 ** this.#failures++)
    systemClock.setTimeout(() => this.#open(), delay)
  }

  #idle(): void {
    if (this.#idleTimer !== undefined) return
    // A follow meanwhile clears this timer (see follow).
    this.#idleTimer = systemClock.setTimeout(() => {
      this.#idleTimer = undefined
      this.#end()
    }, LINGER_MS)
  }

  /** Ends the connection at once (the adapter's connection is closing). */
  close(): void {
    this.#followers.clear()
    this.#answers.clear()
    this.#stopLinger()
    this.#end()
  }

  #stopLinger(): void {
    systemClock.clearTimeout(this.#idleTimer as TimerHandle)
    this.#idleTimer = undefined
  }

  #end(): void {
    const client = this.#client
    this.#client = undefined
    this.#working = false
    void client?.end().catch(() => {})
  }
}
