/**
 * What a client tells an observer about its holds, through a handful of
 * optional hooks: the one interface the core calls to be measured. The core
 * implements none of it; `zaris/otel` bridges it to OpenTelemetry metrics
 * and spans, and anything else (a logger, a test) may implement it too.
 *
 * A client without telemetry pays one property read at each hook point: no
 * wrapper, no clock reading, nothing recorded.
 *
 * @module
 */
import type { Adapter } from './contract/adapter'
import type { Fence } from './hold/life'

/** What an acquire takes: a lock, several locks, a lease, an election's term or a semaphore's permit. */
export type HoldKind = 'lock' | 'locks' | 'lease' | 'term' | 'permit'

/**
 * One acquire, as its telemetry sees it when it starts: what the client asked
 * for, as the client passes it on (a `lease` with `won` set is an election's
 * campaign: a term).
 */
export interface AcquireInfo {
  /** What it takes (`lease` for an election's term too: see `won`). */
  readonly kind: 'lock' | 'locks' | 'lease' | 'permit'
  /** The key (every kind but `locks`). */
  readonly key?: string
  /** The keys of `locks`. */
  readonly keys?: readonly string[]
  /** A lock's mode (`lock` and `locks`; the others are exclusive). */
  readonly mode?: 'exclusive' | 'shared'
  /** Set when the lease is an election's term. */
  readonly won?: unknown
}

/** How long one acquire may wait, and its caller's signal. */
export interface AcquireWait {
  /** Ms it may wait (0: one try). */
  readonly wait: number
  /** The caller's signal: an acquire that rejects once it aborted was `aborted`. */
  readonly signal: AbortSignal | undefined
}

/** How a hold ended, as the code of its signal's reason. */
export type HoldEndCode = 'RELEASED' | 'CLOSED' | 'EXPIRED' | 'STOLEN' | 'LOST'

/**
 * Hooks a client calls, each optional. `acquire` and `release` wrap the work
 * (so a tracer can make it the active span); the others are told after the fact.
 *
 * @example
 * const log: Telemetry = { holdEnded: (hold, code) => console.log(hold.key, hold.token, code) }
 * const client = new Client(memoryAdapter({ namespace: 'demo' }), { telemetry: log })
 */
export interface Telemetry {
  /** The adapter the client's parts use instead of `adapter` (to time and trace its commits). */
  adapter?(adapter: Adapter): Adapter
  /** Runs one acquire (`run`), resolving what it resolves: a hold, or `null`. */
  acquire?<T>(info: AcquireInfo, wait: AcquireWait, run: () => Promise<T>): Promise<T>
  /** Runs the release (or close) of `hold`: the commit that deletes its entry. */
  release?<T>(hold: Fence, run: () => Promise<T>): Promise<T>
  /** A hold of this client ended, for the reason `code`. */
  holdEnded?(hold: Fence, code: HoldEndCode): void
  /** A renewal was answered: `ok`, or lost (false); false too when an automatic renewal could not reach the store. */
  renewed?(hold: Fence, ok: boolean): void
  /**
   * An event reached a watch: `backlog` is how many earlier ones its reader
   * has not taken yet (0: the reader keeps up). A watch's stream that
   * reconnects is told to the adapter's watch sink (`WatchSink.reconnected`).
   */
  watched?(backlog: number): void
}
