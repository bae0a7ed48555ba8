/**
 * An {@link Adapter} over a store of this process: the memory adapter, and
 * the stores a node keeps in memory or in a SQLite file. The store under it
 * hands over (capability `handover`, parked.ts): a commit sent with
 * `waitChange` waits in the store and is tried again in the very step of
 * the change that may let it through.
 *
 * @module
 */
import type { Adapter, Capabilities, Check, CommitOptions, CommitResult, Entry, HistoryLimits, HistoryPage, ListPage, Op, Unsubscribe, WatchSink } from '../../core/contract/adapter'
import { checkListOptions, checkOrElse, checkPrefix, checkWatchArgs } from '../../core/contract/validate'
import { AdapterLife } from './life'
import type { ParkOptions } from './parked'

/** What {@link localAdapter} runs on: a `LocalStore`, or a store built on one (the SQLite file's). */
export interface LocalBackend {
  get(key: string): Entry | undefined | Promise<Entry | undefined>
  /** A page of live entries under `prefix` after `after` (the arguments checked). */
  list(prefix: string, after?: string, limit?: number): ListPage | Promise<ListPage>
  history(prefix: string, after: number, limits: HistoryLimits): HistoryPage | Promise<HistoryPage>
  /**
   * `seen` and `requestId` come from the commit's options; a LocalStore needs
   * only `seen`. `park`: how a commit whose check fails waits (parked.ts).
   */
  commit(checks: Check[], ops: Op[], seen: number | undefined, requestId: string | undefined, park: ParkOptions | undefined): CommitResult | Promise<CommitResult>
  watch(prefix: string, sink: WatchSink, fromRevision?: number): Unsubscribe
  /** How many parked commits went through so far (a LocalStore's `granted`). */
  readonly granted?: number
  /**
   * True if a parked commit's answer is final the moment the store gives it
   * (a LocalStore in memory): `CommitOptions.onAnswer` is passed on. A store
   * that must still make the answer durable (the SQLite file's) leaves it out.
   */
  readonly answersAtOnce?: boolean
}

const CAPABILITIES: Capabilities = Object.freeze({ history: true, commitOnChange: true, keepParked: true, handover: true, orElse: true })

/**
 * An adapter's life that also ends its parked commits' waits when it closes
 * (here, not in AdapterLife: the IndexedDB adapter, which parks nothing,
 * shares that class and a page's first load carries it).
 */
class ParkingLife extends AdapterLife {
  readonly #ends = new Set<() => void>()
  #closed = false

  /** Calls `end` when the adapter closes, until the returned function is called (which does not call it); at once if closed. */
  onClose(end: () => void): () => void {
    if (this.#closed) {
      end()
      return () => {}
    }
    this.#ends.add(end)
    return () => this.#ends.delete(end)
  }

  override close(): boolean {
    if (!super.close()) return false
    this.#closed = true
    for (const end of [...this.#ends]) end()
    this.#ends.clear()
    return true
  }
}

/** The longest a local store keeps a commit parked, in ms (a longer `waitChange` is cut to it). */
export const MAX_PARK_MS = 24 * 60 * 60_000

/**
 * An Adapter over a store of this process (memory, or the SQLite file's).
 * Each adapter closes on its own (its watches end, its parked commits are
 * answered with their first try, its calls fail with `ClosedError`) while
 * the store lives on for others.
 */
export function localAdapter(name: string, store: LocalBackend, onClose?: () => void): Adapter {
  const life = new ParkingLife(name)
  const open = () => life.assertOpen()
  return {
    name,
    capabilities: CAPABILITIES,
    async history(prefix, after, limits) {
      open()
      return store.history(prefix, after, limits)
    },
    async get(key) {
      open()
      return store.get(key)
    },
    async list(prefix, options) {
      open()
      const { after, limit } = checkListOptions(options)
      return store.list(checkPrefix(prefix), after, limit)
    },
    async commit(checks, ops, options) {
      open()
      // A wait of whole ms, cut to a day; none (undefined, 0, negative, NaN) does not park.
      const wait = options?.waitChange
      if (wait! > 0) return parked(store, life, checks, ops, options!, Math.min(Math.ceil(wait!), MAX_PARK_MS))
      const granted = store.granted
      const r = await store.commit(checks, ops, options?.seen, options?.requestId, undefined)
      // This commit handed over (a release) on a store whose answers must first be made durable: its answer
      // waits a turn, so the new holder's answer, on its way through the disk, goes out first. A store that
      // answers at once has resolved the new holder's take (and a node has written it) inside the step already;
      // a turn there would only let a new holder whose loop never yields keep the releaser away for good.
      if (store.granted !== granted && !store.answersAtOnce) await new Promise<void>((resolve) => nextTurn(resolve))
      return r
    },
    async watch(prefix, sink, fromRevision) {
      open()
      checkWatchArgs(prefix, sink, fromRevision)
      return life.track(store.watch(prefix, sink, fromRevision))
    },
    async close() {
      if (life.close()) onClose?.()
    },
  }
}

/** A commit that may park: its wait ends with the caller's signal or the adapter's close. */
function parked(store: LocalBackend, life: ParkingLife, checks: Check[], ops: Op[], options: CommitOptions, ms: number): CommitResult | Promise<CommitResult> {
  checkOrElse(options.orElse)
  const caller = options.signal
  // Made only if the commit parks (most takes go through at once).
  const stop = (end: () => void) => {
    if (caller?.aborted) end()
    caller?.addEventListener('abort', end, { once: true })
    const unclose = life.onClose(end)
    return () => {
      caller?.removeEventListener('abort', end)
      unclose()
    }
  }
  return store.commit(checks, ops, options.seen, options.requestId, {
    ms,
    keep: options.keepParked === true,
    wakeOwner: options.wakeOwner,
    order: options.parkOrder,
    onParked: options.onParked,
    onAnswer: store.answersAtOnce ? options.onAnswer : undefined,
    stop,
    orElse: options.keepParked === true ? options.orElse : undefined,
  })
}

/** Calls `fn` on the next turn of the event loop (after every promise settled in this one). */
function nextTurn(fn: () => void): void {
  if (typeof setImmediate === 'function') setImmediate(fn)
  else setTimeout(fn, 0)
}
