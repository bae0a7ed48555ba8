/**
 * The adapter contract: the only thing a storage backend implements. Five
 * members — `get`, `list`, `commit`, `watch`, `close` — and optional
 * capabilities that are declared, never guessed. Every lock, lease, counter,
 * watch and election in zaris is built by the core on these alone.
 *
 * Invariants every adapter keeps (the conformance suite checks each):
 * - `revision` is store-wide: every successful commit takes the next number,
 *   every entry it writes carries it; never reused, never reset by deletes or
 *   expiry, and durable stores keep it across restarts.
 * - `created` is the revision that started the entry's current life. An
 *   overwrite keeps it; a delete or expiry ends it; a `set` with `fresh` starts
 *   a new life over a live entry (how a steal kills the old token).
 * - An entry whose TTL ran out (on the store's clock) is absent to every read
 *   and check at once. Its expiry is a delete that takes the next revision and
 *   is reported to watchers as `expire`, exactly once.
 * - Watchers see events in revision order, none lost or doubled.
 *
 * @module
 */

import type { Clock } from './clock'

/** A value zaris can store: anything JSON can carry (no `undefined`, functions, NaN or cycles). */
export type Value = string | number | boolean | null | Value[] | { [key: string]: Value }

/**
 * A live entry of a store.
 *
 * @example
 * const e = await client.get('report:status') // { key, value: 'running', revision: 12, created: 12 }
 */
export interface Entry<V extends Value = Value> {
  /** The entry's key. */
  key: string
  /** The stored value. */
  value: V
  /** The revision of the commit that last wrote this entry. */
  revision: number
  /** The revision of the commit that started this entry's current life. */
  created: number
  /** The id of the client that holds this entry as a lock, lease or candidacy. */
  owner?: string
  /** Milliseconds left before the entry expires; absent when it has no TTL. */
  ttl?: number
}

/**
 * A condition of a commit. `revision` compares the entry's last write,
 * `created` the start of its life; `null` means "no live entry".
 *
 * @example
 * const absent: Check = { key: 'lock:a', revision: null }
 * const fenced: Check = { key: 'lock:a', created: lock.token }
 */
export type Check = { key: string; revision: number | null } | { key: string; created: number | null }

/**
 * A write of a commit.
 *
 * @example
 * const op: Op = { type: 'set', key: 'lock:a', value: null, ttl: 30_000, owner: client.id }
 */
export type Op =
  | {
      type: 'set'
      key: string
      value: Value
      /** Milliseconds to live, on the store's clock; absent for no expiry. */
      ttl?: number
      owner?: string
      /** Start a new life even over a live entry: `created` becomes this commit's revision. */
      fresh?: boolean
    }
  | { type: 'delete'; key: string }

/**
 * What a commit returns: on success the new revision, the entries it wrote
 * and the keys whose live entries it deleted; on failure, nothing written and
 * the current entry (or `undefined`) of every check that failed.
 *
 * @example
 * const r = await adapter.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: 1 }])
 * if (r.ok) console.log(r.revision)
 */
export type CommitResult =
  | { ok: true; revision: number; entries: Entry[]; deleted: string[] }
  | { ok: false; failed: Array<{ key: string; entry: Entry | undefined }> }

/**
 * One change seen by a watcher.
 *
 * @example
 * for await (const ev of client.watch('lock:', { prefix: true })) console.log(ev.type, ev.key, ev.revision)
 */
export interface WatchEvent {
  /** A write, a delete, or an expiry (a delete the store made when a TTL ran out). */
  type: 'put' | 'delete' | 'expire'
  /** The key that changed. */
  key: string
  /** The store revision of the change. */
  revision: number
  /** The written value, on `put`. */
  value?: Value
  /** On `put`: the revision that started the entry's life (a lock's token). */
  created?: number
  /** On `put`: the owner written with the entry. */
  owner?: string
  /** On `put`: the TTL written with the entry. */
  ttl?: number
}

/**
 * Where an adapter delivers a watch. `event` is called in revision order;
 * `error` at most once, and ends the watch (for example a `CompactedError`
 * when `fromRevision` is older than the history the store keeps).
 */
export interface WatchSink {
  /** One event, in revision order. */
  event(event: WatchEvent): void
  /** The watch failed and is over. */
  error(error: Error): void
}

/**
 * Which page of a `list` to read.
 *
 * @example
 * const next: ListOptions = { after: page.entries.at(-1)!.key, limit: 500 }
 */
export interface ListOptions {
  /** Start after this key (exclusive): the last key of the page before. Default: from the first key. */
  after?: string
  /** Most entries in the page (an integer >= 1). A store may return fewer; default: the store's own page size. */
  limit?: number
}

/**
 * One page of a `list`: live entries sorted by key (UTF-16 code unit
 * order, as JavaScript compares strings), and whether more follow. When
 * `more` is true, `entries` is not empty: the next page starts after its last key.
 *
 * @example
 * const { entries, more } = await adapter.list('job:', { limit: 100 })
 */
export interface ListPage {
  /** The page's live entries, sorted by key. */
  entries: Entry[]
  /** True when entries after the last one follow (ask again with `after` its key). */
  more: boolean
}

/**
 * How much one {@link Adapter.history} page may hold: it stops between two
 * revisions once it has this many events or bytes of them.
 *
 * @example
 * const limits: HistoryLimits = { maxEvents: 1_000, maxBytes: 1024 * 1024 }
 */
export interface HistoryLimits {
  /** Most events (a revision is never split, so a page may pass this by the rest of one commit). */
  maxEvents: number
  /** Most bytes of events, as the store estimates them (likewise). */
  maxBytes: number
}

/**
 * One page of a store's change history (capability `history`): the events
 * after a revision for keys under a prefix, in revision order, complete for
 * every revision up to `through`.
 *
 * @example
 * const page = await adapter.history!('job:', 120, { maxEvents: 500, maxBytes: 1 << 20 })
 */
export interface HistoryPage {
  /** The events, in revision order. */
  events: WatchEvent[]
  /** Every event up to this revision is in this page or an earlier one. */
  through: number
  /** The page was cut short: ask again after `through`. */
  more: boolean
}

/** Ends a watch; calling it again is harmless. */
export type Unsubscribe = () => void

/** Per-commit options an adapter may use. */
export interface CommitOptions {
  /**
   * A unique id for this commit, so that a transport that retries a request
   * whose answer was lost does not apply it twice.
   */
  requestId?: string
}

/**
 * The storage contract. Implement the five required members; declare optional
 * ones in {@link Adapter.capabilities}.
 *
 * @example
 * const client = new Client(memoryAdapter({ namespace: 'tests' }))
 */
export interface Adapter {
  /** A short name for messages, for example `memory` or `indexeddb`. */
  readonly name: string
  /** Optional members this adapter implements. */
  readonly capabilities?: Capabilities
  /**
   * The clock clients of this adapter count their holds on unless given one:
   * the IndexedDB adapter offers one whose timers keep running in a hidden tab.
   */
  readonly holderClock?: Clock
  /** The live entry at `key`, or `undefined`. */
  get(key: string): Promise<Entry | undefined>
  /**
   * A page of the live entries whose key starts with `prefix`, sorted by
   * key, starting after `options.after`; `more` says whether more follow.
   * Callers page through (the client's `list()` does); a store that can
   * answer everything at once may, and says `more: false`.
   */
  list(prefix: string, options?: ListOptions): Promise<ListPage>
  /** Applies `ops` atomically if every check holds, with one new revision. */
  commit(checks: Check[], ops: Op[], options?: CommitOptions): Promise<CommitResult>
  /**
   * Delivers put, delete and expire events for keys starting with `prefix`.
   * With `fromRevision`, every event after that revision is delivered first
   * (or `sink.error` gets a `CompactedError`); without it, every event after
   * the returned promise resolves.
   */
  watch(prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe>
  /** Frees the adapter's resources and ends its watches. */
  close(): Promise<void>
  /**
   * Capability `ownerGone`: resolves when the client `owner` is known to be
   * dead (a closed tab), so its entries can be taken over before their TTL.
   * Never resolves for a live owner; rejects with the signal's reason on abort.
   */
  ownerGone?(owner: string, signal: AbortSignal): Promise<void>
  /** Capability `ownerGone`: registers `owner` as alive for as long as this adapter is open. */
  registerOwner?(owner: string): Promise<void>
  /**
   * Capability `history`: one page of the events after revision `after` for
   * keys under `prefix`, read from the store's history without subscribing
   * (a node streams an old watch from it as its client reads). Rejects with
   * `CompactedError` when that history is gone. Without `more`, `through` is
   * the store's revision.
   */
  history?(prefix: string, after: number, limits: HistoryLimits): Promise<HistoryPage>
}

/** Capabilities an adapter declares instead of leaving them to be guessed. */
export interface Capabilities {
  /** The adapter implements `ownerGone` and `registerOwner`. */
  ownerGone?: boolean
  /** The adapter implements `history`. */
  history?: boolean
}
