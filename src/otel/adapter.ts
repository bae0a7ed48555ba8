/**
 * The bridge's view of a client's adapter: its commits timed
 * (`zaris.commit.duration`) and traced (`zaris.commit` spans), the breaks of
 * its watches' connection counted (`zaris.watch.reconnects`), and the
 * backlog of each `client.watch` as its events come (`zaris.watch.lag`).
 *
 * The client's parts call the adapter they were made with, the object
 * `client.adapter` is; so the bridge replaces `commit` and `watch` on that
 * object itself (own properties over the class's methods, calling them bound
 * to it), and the core carries no hook for it. An adapter two clients share
 * is timed once, by the first telemetry that observes one of them.
 *
 * @module
 */
import type { Adapter, Check, CommitOptions, Op, WatchEvent, WatchSink } from '../core/contract/adapter'
import { SPAN_KIND, STATUS_ERROR, type Span, type Tracer } from './api'
import type { Instruments } from './instruments'
import type { AttributeSets } from './sets'

/** `db.system.name` of OpenTelemetry's semantic conventions, for stores that are databases. */
const DB_SYSTEMS: Record<string, string> = { redis: 'redis', etcd: 'etcd', postgres: 'postgresql', sqlite: 'sqlite' }

/** The first character of zaris's own keys (core/contract/reserved.ts), which a prefix watch never delivers. */
const RESERVED = '\u0001'

/** Adapters already observed. */
const observed = new WeakSet<Adapter>()

/**
 * One `client.watch` as its reader sees it: the events it let through (by
 * its own rule, core/watch.ts) and the `next()` calls of its reader. A
 * `next()` takes a buffered event, or waits and takes the next to come; so
 * as an event comes, the events received and not taken are the received
 * less the calls, at least 0.
 */
export class Reader {
  #received = 0
  calls = 0
  #last = -1
  readonly #lastKeys = new Set<string>()
  constructor(
    readonly key: string,
    readonly prefix: boolean,
  ) {}

  /** The backlog as `ev` comes, or undefined when the watch drops it (another key, a revision it delivered). */
  saw(ev: WatchEvent): number | undefined {
    if (ev.revision < this.#last || (ev.revision === this.#last && this.#lastKeys.has(ev.key))) return undefined
    if (this.prefix ? !ev.key.startsWith(this.key) || ev.key.startsWith(RESERVED) : ev.key !== this.key) return undefined
    if (ev.revision !== this.#last) this.#lastKeys.clear()
    this.#last = ev.revision
    this.#lastKeys.add(ev.key)
    return Math.max(0, this.#received++ - this.calls)
  }
}

/**
 * Observes `adapter` (once): returns the function that names the reader of
 * the next `watch` it is asked for (`client.watch` asks it at once, in its
 * own call).
 */
export function observeAdapter(adapter: Adapter, sets: AttributeSets, m: Instruments | undefined, tracer: Tracer | undefined): (reader: Reader | undefined) => void {
  let reader: Reader | undefined
  const nextReader = (r: Reader | undefined) => void (reader = r)
  if (observed.has(adapter)) return nextReader
  observed.add(adapter)
  const db = DB_SYSTEMS[sets.store]
  const commit = adapter.commit.bind(adapter)
  replace(adapter, 'commit', (checks: Check[], ops: Op[], options?: CommitOptions) => {
    const start = m ? performance.now() : 0
    const span = tracer?.startSpan('zaris.commit', {
      kind: SPAN_KIND.client,
      attributes: { 'zaris.store': sets.store, 'db.operation.name': 'commit', 'db.operation.batch.size': ops.length, ...(db ? { 'db.system.name': db } : {}) },
    })
    const done = (outcome: string, err?: unknown) => {
      if (m) {
        const attrs = err === undefined ? sets.of('zaris.commit.outcome', outcome) : { ...sets.of('zaris.commit.outcome', outcome), 'error.type': errorType(err) }
        m.commit.record((performance.now() - start) / 1000, attrs)
      }
      if (span) {
        span.setAttribute('zaris.commit.outcome', outcome)
        if (err !== undefined) failed(span, err)
        span.end()
      }
    }
    return commit(checks, ops, options).then(
      (r) => (done(r.ok ? 'ok' : 'conflict'), r),
      (err: unknown) => {
        done('error', err)
        throw err
      },
    )
  })
  if (!m) return nextReader
  const watch = adapter.watch.bind(adapter)
  // An adapter tells every watch on a connection of its break in one go: one break counts once, however many watch.
  let told = false
  replace(adapter, 'watch', (prefix: string, sink: WatchSink, fromRevision?: number) => {
    const r = reader
    reader = undefined
    const lag = sets.of(undefined)
    const seen: WatchSink = {
      error: (err) => sink.error(err),
      event: r
        ? (ev) => {
            const backlog = r.saw(ev)
            if (backlog !== undefined) m.lag.record(backlog, lag)
            sink.event(ev)
          }
        : (ev) => sink.event(ev),
      reconnecting: () => {
        if (!told) {
          told = true
          queueMicrotask(() => (told = false))
          m.reconnects.add(1, lag)
        }
        sink.reconnecting?.()
      },
    }
    return watch(prefix, seen, fromRevision)
  })
  return nextReader
}

/**
 * Sets `adapter[name]` to `fn`. An adapter that cannot take it (a frozen
 * object of your own) is left as it is: that part goes unobserved, and the
 * client works as without telemetry.
 */
function replace<K extends 'commit' | 'watch'>(adapter: Adapter, name: K, fn: Adapter[K]): void {
  try {
    adapter[name] = fn
  } catch {
    // Frozen, or the member is read-only.
  }
}

/** Marks `span` failed with `err`, as the semantic conventions ask (`error.type`, status ERROR, the exception). */
export function failed(span: Span, err: unknown): void {
  span.setAttribute('error.type', errorType(err))
  span.setStatus({ code: STATUS_ERROR, message: err instanceof Error ? err.message : String(err) })
  span.recordException(err instanceof Error ? err : String(err))
}

/**
 * `error.type`: an error's `code` (a zaris error's, or a system error's), else its name.
 * Read, not imported: the bridge imports nothing of zaris at run time, so a
 * build of `zaris/otel` shares no chunk with the rest (a shared chunk would
 * cost every page that imports `zaris` one more file).
 */
function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string') return code
  return err instanceof Error ? err.name : typeof err
}
