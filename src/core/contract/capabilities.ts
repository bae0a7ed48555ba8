/**
 * The adapter contract's optional parts: the capabilities an adapter
 * declares, and the gates of a store whose clients share a lock manager
 * (adapter.ts re-exports them; kept apart to keep that file readable).
 *
 * @module
 */

/**
 * How a gate is asked for (capability `gates`).
 *
 * @example
 * const gate = adapter.gate!('lock:a', { ifAvailable: true })
 */
export interface GateOptions {
  /** `exclusive` (default): held alone. `shared`: beside other shared holders, never beside an exclusive one. */
  mode?: 'exclusive' | 'shared'
  /** Only if nobody holds or waits for it now: else `granted` resolves false at once. */
  ifAvailable?: boolean
  /** Take it from whoever holds it now (they are told: `onLost`). */
  steal?: boolean
}

/**
 * One client's request for the gate of a key (capability `gates`), from the
 * queue to its release. A gate excludes as a read-write lock does: one
 * exclusive holder, or any number of shared ones; the lock manager grants
 * waiters in the order they asked, and a client that dies (a closed or
 * crashed tab) loses its gates at once.
 *
 * What the store keeps with it: every entry written through the gate
 * (`commit(checks, ops, { gate })`) at the gate's key is marked with its mode,
 * and keeps the mark while its life lasts. A client that holds the gate may
 * take the key over a marked entry whose writer cannot hold the gate beside
 * it — any, when held exclusive; an exclusive one, when held shared — since
 * that writer has released, died or lost it; never over an entry written
 * without the gate (a plain put, a client without gates): to those it waits,
 * as it would without gates.
 *
 * @example
 * const gate = adapter.gate!('lock:a')
 * if (await gate.granted) await adapter.commit([{ key: 'lock:a', revision: null }], [{ type: 'set', key: 'lock:a', value: null, owner: 'me', ttl: 30_000 }], { gate })
 */
export interface Gate {
  /** The key this is the gate of. */
  readonly key: string
  /** How it is asked for and held. */
  readonly mode: 'exclusive' | 'shared'
  /** Resolves true once this client holds the gate; false when `ifAvailable` found it taken, or the request was withdrawn first. */
  readonly granted: Promise<boolean>
  /** True while this client holds the gate. */
  readonly held: boolean
  /**
   * Takes the gate from whoever holds it (a holder that is frozen or hung
   * past its TTL keeps its gate until then): resolves once held. Only after
   * this client's take committed, so that of many waiters one steals.
   */
  steal(): Promise<void>
  /** Calls `fn` once if the gate is taken from this client after it held it (another client stole it). */
  onLost(fn: () => void): void
  /**
   * Whether another client holds or waits for this gate now (resolves false
   * when the lock manager cannot say). A release asks it to leave the key to
   * the next holder, who takes it over in its own take.
   */
  taken(): Promise<boolean>
  /** Gives the gate up, or withdraws the request; harmless twice. */
  release(): void
}

/** Capabilities an adapter declares instead of leaving them to be guessed. */
export interface Capabilities {
  /** The adapter implements `ownerGone` and `registerOwner`. */
  ownerGone?: boolean
  /** The adapter implements `history`. */
  history?: boolean
  /** The adapter implements `gate`. */
  gates?: boolean
  /** The adapter's `commit` honours `CommitOptions.waitChange`. */
  commitOnChange?: boolean
  /** The adapter's `commit` honours `CommitOptions.keepParked` (with `commitOnChange`). */
  keepParked?: boolean
  /**
   * The store hands over: a parked commit (`waitChange`, see `keepParked`)
   * is tried again *inside the step* of the commit or expiry that changed
   * one of its checked keys — after that step's own writes, before its
   * caller is answered and before any other commit — parked commits in
   * `parkOrder`, then in the order they parked, each applied with a
   * revision of its own (after the step's) and answered with its own
   * result. A try that goes through may let others through in turn (the
   * same step goes on until none does). So a release hands a lock to the
   * waiter whose take was parked: no one else can take the key between, and
   * the waiter learns it from its commit's answer. Every check is judged in
   * that step (a waiter that gave up deleted its place: its take fails). Past
   * its wait (`waitChange` ms from when it parked) a parked commit is never
   * applied by another's change, and is answered at once with one last try:
   * its caller counts a hold's TTL from before it sent the commit, so a late
   * grant would be born expired. Honours `keepParked`, `signal` and
   * `onParked`, and may call `onAnswer`; implies `commitOnChange` and `keepParked`. Implementations:
   * src/adapters/kit/parked.ts (in process), src/adapters/redis/handover.ts
   * (Lua), src/adapters/postgres/sql/park.ts (PL/pgSQL), src/adapters/file/parked.ts
   * (rows of a SQLite file); test/memory/handover.test.ts and the
   * conformance suite say what they must do. A store without it (etcd,
   * IndexedDB) leaves the core to wait on watch events and try again.
   *
   * Why etcd does not declare it: etcd runs no code of ours, so the
   * committer would have to apply a parked take for its waiter. In the
   * release's own transaction, the release and the grant would share one
   * etcd revision (one transaction is one revision), where this contract
   * gives each commit a revision of its own above the step's, and etcd
   * refuses a delete and a put of one key in a transaction (merged, a
   * watcher would see no end of the old hold); in a transaction of its own
   * after the release, the grant costs a read of the parked takes and a
   * second write on every release with waiters — slower than the first
   * waiter's own take after the release's watch event (bench handover-8,
   * etcd adapter: p50 2.5-3.4 ms) — and an expiry, which no client's
   * transaction makes, is still handed over only by the next commit at the
   * key. The etcd adapter instead serves a waiter's watch from the past at
   * once when nothing changed since (src/adapters/etcd/watch-start.ts).
   */
  handover?: boolean
  /**
   * The store honours `CommitOptions.orElse` on a commit sent with
   * `waitChange` and `keepParked`, choosing among the ways in one step
   * (kit/parked.ts, redis/handover.ts, postgres/sql/park.ts, file/parked.ts; a node passes them to such a store,
   * and refuses them over any other: the HTTP adapter then drops this).
   */
  orElse?: boolean
  /**
   * How finely the store serves TTLs, in ms (default 1): an entry never frees
   * before its TTL and frees at most this much after it (beyond the store's
   * usual delay in reporting it). etcd's leases count whole seconds.
   */
  ttlGranularity?: number
}
