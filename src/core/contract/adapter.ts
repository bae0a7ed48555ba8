/**
 * The adapter contract: the only thing a storage backend implements. Five
 * members — `get`, `list`, `commit`, `watch`, `close` — and optional
 * capabilities that are declared, never guessed. Every lock, lease, counter,
 * watch and election in zaris is built by the core on these alone. The
 * rules every adapter keeps are the documentation of {@link Adapter}; the
 * guide (docs/writing-an-adapter.md, shipped in the package) walks through
 * an adapter that keeps them.
 *
 * @module
 */
import type { Capabilities, Gate, GateOptions } from './capabilities'

export type { Capabilities, Gate, GateOptions } from './capabilities'

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
 * - `set` writes `value` (with `ttl` and `owner`, or without them). It keeps
 *   the entry's `created` only when a live entry has the same owner (both
 *   absent counts as the same) and `fresh` is not set; otherwise it starts a
 *   new life (see the module's new-life rule).
 * - `delete` removes the live entry, if any; deleting nothing is not a failure.
 * - `add` adds `delta` (a safe integer) to the number at `key` in this same
 *   commit: with no live entry it creates one at `0 + delta` (a new life, no
 *   owner, no TTL); over a live entry it changes only the value (and the
 *   revision): `created`, `owner` and the expiry stay, as Redis's INCR keeps a
 *   key's TTL. A live value that is not a number, or a result outside the
 *   safe-integer range, makes the whole commit throw an `InvalidArgumentError`
 *   naming the key (bad input, not a failed check: nothing is written). The
 *   written entry is returned in `entries` (its `ttl` the milliseconds left,
 *   as every entry's), and watchers see a `put` with the entry's `created`,
 *   `owner` and the `ttl` it was last `set` with (an `add` sets none).
 *
 * @example
 * const op: Op = { type: 'set', key: 'lock:a', value: null, ttl: 30_000, owner: client.id }
 * const inc: Op = { type: 'add', key: 'jobs:done', delta: 1 }
 */
export type Op =
  | {
      type: 'set'
      key: string
      value: Value
      /** Milliseconds to live, on the store's clock; absent for no expiry. */
      ttl?: number
      owner?: string
      /** Start a new life even over a live entry of the same owner: `created` becomes this commit's revision. */
      fresh?: boolean
    }
  | { type: 'delete'; key: string }
  | {
      type: 'add'
      key: string
      /** A safe integer added to the key's number (created at 0 when absent). */
      delta: number
    }

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
 * when `fromRevision` is older than the history the store keeps). Its
 * members are plain functions (no `this`): an adapter may copy them into a
 * sink of its own (`{ ...sink, event }`).
 */
export interface WatchSink {
  /** One event, in revision order. */
  event(event: WatchEvent): void
  /** The watch failed and is over. */
  error(error: Error): void
  /**
   * Optional, for telemetry: the adapter's stream to the store broke and it
   * is reconnecting, to resume where it was (nothing lost or doubled). An
   * adapter whose watches ride a connection calls it, if present, on each
   * watch once per break.
   */
  reconnecting?(): void
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
  /**
   * The highest revision the caller has seen from this store (a safe integer
   * >= 0). A store that can lose its state without its adapter knowing what
   * clients saw (the local store behind a memory node, which a restart
   * empties) moves its revision up to `seen` before the commit — before the
   * checks, so even a refused commit (an old holder's renewal) lifts it — so
   * that a client never gets a token at or below one it has seen. It never
   * moves past {@link SEEN_REVISION_LIMIT} this way: `seen` may come from an
   * untrusted client, and no request may bring a store near the end of its
   * revisions. A durable store may ignore it (IndexedDB, etcd), and so may
   * an adapter that is itself the connected client and keeps its own highest
   * revision seen (the Redis adapter sends its own with every script).
   */
  seen?: number
  /**
   * Capability `commitOnChange`: ms the store may keep a commit whose check
   * fails, to try it once more when a change at one of its checked keys may
   * have turned a check's outcome (a put, delete or expiry), and answer with
   * that try, success or failure; with no such change within the time (or
   * past the store's own bounds), it answers the failure of the first try.
   * Linearized where the answering try is applied, within the call, as any
   * commit. A store without the capability ignores it. The core's acquire
   * sends its take this way when it stands first in line behind a plain holder.
   */
  waitChange?: number
  /**
   * Capability `keepParked`, with `waitChange`: wait for the commit to go
   * through, not for the first change. The store keeps it parked through
   * tries that fail only at checks that failed on its first try, and answers
   * it when a try succeeds, when a check that held on the first try fails
   * (something the caller owns and checks is gone: a waiter's place in
   * line), or when the wait ends (with the failure then). Parked commits are
   * tried in the order they parked. The core's acquire parks its take this
   * way, checking its own place in line, right after it joins the line: a
   * waiter that gave up deletes its place, and its take can never go through.
   */
  keepParked?: boolean
  /**
   * With `keepParked`: answer also a try that fails at a checked key whose
   * live entry is now owned by this owner (and do not park a commit whose
   * first try failed so). A shared waiter's take, planned to start a group,
   * comes back when another waiter started one, to join it instead.
   */
  wakeOwner?: string
  /**
   * Capability `keepParked`: parked commits are tried in ascending
   * `parkOrder` (a safe integer), those without one after, each in the
   * order they parked. A waiter passes its place in line's `created`, so
   * that a take that parks again (after a try that was answered) keeps its
   * turn. A store that cannot order its parked commits (a node in front of
   * a Redis or an etcd) tries them in the order they parked. A store may
   * keep a kept commit's turn between its wait's end and its next park (the
   * local store, src/adapters/kit/parked.ts, and Redis: up to a second): a commit of a
   * higher `parkOrder` at its keys then waits even where its checks hold,
   * and is answered at its wait's end with no failed check ("not your turn
   * yet": its caller parks again).
   */
  parkOrder?: number
  /**
   * Capability `orElse`, with `waitChange` and `keepParked`: other ways the
   * commit may go through, each a whole commit of its own (checks and ops).
   * Whenever the store tries the commit — its first try, and each try of it
   * parked — it applies the ops of the first of the commit itself and these,
   * in order, whose checks all hold now, as one commit; none holding, it
   * parks, is judged and answered on the commit's own checks (`keepParked`,
   * `wakeOwner`), and a change at any key that any of them checks tries it
   * again. The answer's entries say which went through. A semaphore's
   * waiter parks one take that may fill any free permit's slot, so a
   * released permit is handed to the first waiter in line in the release's
   * own step. At most 32 (`MAX_OR_ELSE`, limits.ts). A store without the capability
   * ignores it.
   */
  orElse?: ReadonlyArray<{ checks: Check[]; ops: Op[] }>
  /**
   * Capability `handover`: ends a parked commit's wait. It is answered with
   * its first try's failure and never applied afterwards (a try that went
   * through before the abort stands, and is answered).
   */
  signal?: AbortSignal
  /** Capability `handover`: called once, synchronously, if the commit parks (its first try failed and it waits). */
  onParked?: () => void
  /**
   * Capability `handover`: an early notice of a parked commit's answer.
   * A store may call it once, synchronously, inside the step that answers
   * the commit (a release's, handing it over), with the answer the returned
   * promise then resolves to, where that answer is final at that moment (a
   * store that must still make it durable does not call it). A node writes
   * the new holder's answer from here, before the rest of that step and
   * before the releaser's own answer.
   */
  onAnswer?: (r: CommitResult) => void
  /**
   * Capability `gates`: the commit is made through this gate (one this
   * adapter made): while the gate is held, a check that the gate's key has no
   * live entry (`revision: null` or `created: null`) also holds over a marked
   * entry the gate may take over (see {@link Gate}), and the take is a new
   * life; the entries written at the gate's key are marked with the gate's
   * mode. A store without gates ignores it.
   */
  gate?: Gate
}

/**
 * The highest revision a store moves up to because a client said it had seen
 * it (2^52). Half of the safe-integer range stays for commits: at a million
 * commits a second, 142 years.
 */
export const SEEN_REVISION_LIMIT = 2 ** 52

/**
 * The storage contract. Implement the five required members; declare optional
 * ones in {@link Adapter.capabilities}. The rules every adapter keeps (the
 * conformance suite, `zaris/conformance`, checks each and names it when it
 * fails, as `[rule new-life]`; node_modules/zaris/docs/writing-an-adapter.md
 * walks through them):
 *
 * - `revision` is store-wide: every successful commit takes a number larger
 *   than any before (stores may skip numbers), every entry it writes carries
 *   it; never reused, never reset by deletes or expiry, and durable stores
 *   keep it across restarts. A store whose next revision would pass
 *   `Number.MAX_SAFE_INTEGER` refuses the commit with a
 *   `RevisionExhaustedError` (code `REVISION_EXHAUSTED`) and writes nothing,
 *   rather than lose order; reads go on (`revision`, `exhaustion`).
 * - A commit is one step: every check holds or nothing is written (a
 *   `delete`'s checks hold it back like any op's), and of commits racing on
 *   one key only those whose checks still hold when they write succeed
 *   (`checks`, `atomic`).
 * - `created` is the revision that started the entry's current life (etcd's
 *   create revision). The new-life rule: a write starts a new life —
 *   `created` becomes the commit's revision — when the key has no live entry
 *   (also right after the same owner's entry expired or was deleted), when
 *   the `set` has `fresh`, or when the op's owner differs from the live
 *   entry's owner (an ownerless `set` over an owned entry, an owned `set` over
 *   another owner's or over an ownerless one). A `set` by the same owner (both
 *   absent counts as the same) keeps `created`, and so does an `add`. A delete
 *   or expiry ends the life. So one life has one owner, and a hold is alive
 *   exactly while its key carries its token (`created`) (`new-life`).
 * - TTLs are milliseconds on the store's own clock, never a client's, and may
 *   be fractional (never rounded to "no TTL"). An entry whose TTL ran out is
 *   absent to every read and check at once. Its expiry is a delete that takes
 *   a revision above the entry's last write and is reported to watchers as
 *   `expire`, exactly once (`store-clock`, `fractional-ttl`, `expiry`,
 *   `expiry-revision`).
 * - Keys (and prefixes) are well-formed UTF-16 strings (no lone surrogates),
 *   keys 1 to 1024 UTF-16 code units long, prefixes 0 to 1024. A store refuses
 *   any other with an `InvalidArgumentError` (code `INVALID_ARGUMENT`), even
 *   when called directly, rather than store something else.
 * - A commit sent again with its `requestId` is answered as the first time,
 *   not applied again, also over another connection (`request-id`).
 * - Watchers see events in revision order, none lost or doubled, however fast
 *   commits come; a watch from history that is gone gets `CompactedError`,
 *   never part of it (`watch-order`, `watch-complete`, `compaction`).
 * - A store that can lose its state (a memory node restarted, Redis without
 *   persistence) never hands a client a revision at or below one that client
 *   has seen: see {@link CommitOptions.seen} (`seen`).
 * - After `close()`, calls fail with `ClosedError` and the adapter's watches
 *   get no more events (at most one `sink.error`, a `ClosedError`); a store
 *   out of reach fails calls with `UnavailableError` in bounded time
 *   (`close`, `unavailable`).
 *
 * @example
 * const client = new Client(memoryAdapter({ namespace: 'tests' }))
 */
export interface Adapter {
  /** A short name for messages, for example `memory` or `indexeddb`. */
  readonly name: string
  /** Optional members this adapter implements. */
  readonly capabilities?: Capabilities
  /** The live entry at `key`, or `undefined`. */
  get(key: string): Promise<Entry | undefined>
  /**
   * A page of the live entries whose key starts with `prefix`, sorted by
   * key, starting after `options.after`; `more` says whether more follow.
   * Callers page through (the client's `list()` does); a store that can
   * answer everything at once may, and says `more: false`.
   */
  list(prefix: string, options?: ListOptions): Promise<ListPage>
  /**
   * Applies `ops` atomically if every check holds, with one new revision.
   * Checks are judged before any op; a failed check writes nothing and is
   * answered `ok: false`. Throws `InvalidArgumentError` for malformed input
   * (a key that breaks the key rule, one key in two ops, an `add` over a
   * non-number or past the safe-integer range) and `RevisionExhaustedError`
   * when the store has no revision left.
   */
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
   * Capability `gates`: the gate of `key` — a place in the queue of a lock
   * manager that this store's clients on one machine share (for
   * `zaris://idb`, the browser's Web Locks API, shared by the tabs of an
   * origin), which orders and excludes them before they commit and frees a
   * dead client's gates at once. The core asks for a hold's gate before its
   * take and keeps it while the hold lives; the store's commits still decide
   * every hold and token. The request starts at once; see {@link Gate}.
   */
  gate?(key: string, options?: GateOptions): Gate
  /**
   * Capability `history`: one page of the events after revision `after` for
   * keys under `prefix`, read from the store's history without subscribing
   * (a node streams an old watch from it as its client reads). Rejects with
   * `CompactedError` when that history is gone. Without `more`, `through` is
   * the store's revision.
   */
  history?(prefix: string, after: number, limits: HistoryLimits): Promise<HistoryPage>
}
