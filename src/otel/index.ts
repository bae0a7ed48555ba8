/**
 * `zaris/otel`: a client's waits, holds, renewals and commits as
 * OpenTelemetry metrics and spans. `otel({ meterProvider, tracerProvider })`
 * makes the {@link Telemetry} a client takes (`connect(url, { telemetry })`,
 * or `new Client(adapter, { telemetry })`); in Node, `connect` makes one by
 * itself when `@opentelemetry/api` is installed and a provider is registered
 * or given (docs/observability.md).
 *
 * This module does not import `@opentelemetry/api`: it calls the providers it
 * is given (./api.ts), so it costs nothing where they are not.
 *
 * Keys: spans carry the key (`zaris.key`) by default, as the Redis and etcd
 * instrumentations put a command's key in their spans — the one thing an
 * operator needs to find who waits on what. Keys that carry personal data
 * can be sent hashed (`keys: 'hash'`: `zaris.key.hash`, the same for the same
 * key, but an unsalted hash of a guessable key is guessable) or not at all.
 * Metrics never carry a key: one series per key would grow without bound;
 * `keyGroup` names a bounded group instead (`zaris.key.group`).
 *
 * @module
 */
import type { Adapter, Check, CommitOptions, Op, WatchSink } from '../core/contract/adapter'
import type { Fence } from '../core/locks'
import type { AcquireInfo, AcquireWait, HoldEndCode, HoldKind, Telemetry } from '../core/telemetry'
import { SPAN_KIND, STATUS_ERROR, type Attributes, type MeterProvider, type Span, type Tracer, type TracerProvider } from './api'
import { instrumentsOf, type Instruments } from './instruments'

export type { Attributes, Counter, Histogram, Meter, MeterProvider, Observable, ObservableResult, Span, Tracer, TracerProvider } from './api'
export type { AcquireInfo, AcquireWait, HoldEndCode, HoldKind, Telemetry } from '../core/telemetry'

/** The version zaris reports as its meter's and tracer's. */
const VERSION = '0.1.0'

/** Options of {@link otel}. */
export interface OtelOptions {
  /** Where metrics go (an SDK's `MeterProvider`, or `metrics.getMeterProvider()`). None: no metrics. */
  meterProvider?: MeterProvider
  /** Where spans go (an SDK's `TracerProvider`, or `trace.getTracerProvider()`). None: no spans. */
  tracerProvider?: TracerProvider
  /** The store's name on every metric and span (`zaris.store`). Default: the adapter's (`memory`, `indexeddb`, `node`, `redis`, `etcd`, …). */
  store?: string
  /** What spans say of a key: `plain` (default, `zaris.key`), `hash` (`zaris.key.hash`) or `none`. */
  keys?: 'plain' | 'hash' | 'none'
  /** A bounded name for a key, put on metrics as `zaris.key.group` (for example the part before the first `:`). Default: none. */
  keyGroup?: (key: string) => string
}

/** What a hold was, from its acquire: its kind, its attribute set, and when it began (ms, `performance.now()`). */
interface Tracked {
  kind: HoldKind
  attrs: Attributes
  since: number
}

/** Store names where the adapter's name is not what an operator calls it. */
const STORE_NAMES: Record<string, string> = { http: 'node' }
/** `db.system.name` of OpenTelemetry's semantic conventions, for stores that are databases. */
const DB_SYSTEMS: Record<string, string> = { redis: 'redis', etcd: 'etcd', postgres: 'postgresql', sqlite: 'sqlite' }

/**
 * The attribute sets of one telemetry's metrics, each made once and handed
 * to the SDK as the same object every time: no object built per recording.
 */
class AttributeSets {
  readonly #sets: Map<string, Attributes>
  store: string
  constructor(sets: Map<string, Attributes>, store: string) {
    this.#sets = sets
    this.store = store
  }

  /** `{ zaris.store }` with one more attribute (`name` = `value`), or none. */
  of(name: string | undefined, value?: string): Attributes {
    const id = `${this.store}\u0001${name}\u0001${value}`
    let a = this.#sets.get(id)
    if (!a) {
      a = name === undefined ? { 'zaris.store': this.store } : { 'zaris.store': this.store, [name]: value }
      this.#sets.set(id, a)
    }
    return a
  }

  /** A hold's set (store, kind, key group) with `name` = `value` added when given. */
  hold(base: Attributes, name?: string, value?: string): Attributes {
    if (name === undefined) return base
    const id = `${base['zaris.store']}\u0001${base['zaris.hold.kind']}\u0001${base['zaris.key.group']}\u0001${name}\u0001${value}`
    let a = this.#sets.get(id)
    if (!a) this.#sets.set(id, (a = { ...base, [name]: value }))
    return a
  }

  /** The base set of a hold of `kind`, in key group `group`. */
  base(kind: HoldKind, group: string | undefined): Attributes {
    const id = `${this.store}\u0001${kind}\u0001${group}`
    let a = this.#sets.get(id)
    if (!a) {
      a = { 'zaris.store': this.store, 'zaris.hold.kind': kind }
      if (group !== undefined) a['zaris.key.group'] = group
      this.#sets.set(id, a)
    }
    return a
  }

  /** An acquire's set: its hold's, with mode and outcome. */
  acquire(base: Attributes, mode: string, outcome: string): Attributes {
    const id = `${base['zaris.store']}\u0001${base['zaris.hold.kind']}\u0001${base['zaris.key.group']}\u0001${mode}\u0001${outcome}`
    let a = this.#sets.get(id)
    if (!a) this.#sets.set(id, (a = { ...base, 'zaris.lock.mode': mode, 'zaris.acquire.outcome': outcome }))
    return a
  }
}

/**
 * The telemetry of one client: metrics to `meterProvider`, spans to `tracerProvider`.
 *
 * @example
 * import { otel } from 'zaris/otel'
 * const client = await connect('zaris://idb/app', { telemetry: otel({ meterProvider, tracerProvider }) })
 */
export function otel(options: OtelOptions = {}): Telemetry {
  const m = options.meterProvider ? instrumentsOf(options.meterProvider, VERSION) : undefined
  const tracer = options.tracerProvider?.getTracer('zaris', VERSION)
  const keys = options.keys ?? 'plain'
  const group = options.keyGroup
  const sets = new AttributeSets(m?.sets ?? new Map(), options.store ?? 'unknown')
  const holds = new WeakMap<object, Tracked>()

  /** Span attributes of a key. */
  const keyAttrs = (a: Attributes, key: string) => {
    if (keys === 'plain') a['zaris.key'] = key
    else if (keys === 'hash') a['zaris.key.hash'] = hashKey(key)
    return a
  }
  const baseOf = (kind: HoldKind, key: string) => sets.base(kind, group?.(key))
  const track = (hold: object, kind: HoldKind, attrs: Attributes, now: number) => {
    if ((hold as { held?: boolean }).held === false) return // it ended before its acquire resolved
    holds.set(hold, { kind, attrs, since: now })
    m?.active.add(attrs)
  }

  return {
    adapter(adapter: Adapter): Adapter {
      if (options.store === undefined) sets.store = STORE_NAMES[adapter.name] ?? adapter.name
      return m || tracer ? timedAdapter(adapter, sets, m, tracer) : adapter
    },

    acquire<T>(info: AcquireInfo, o: AcquireWait, run: () => Promise<T>): Promise<T> {
      const start = m ? performance.now() : 0
      const kind: HoldKind = info.kind === 'lease' && info.won ? 'term' : info.kind
      const key = info.keys ? info.keys.join(' ') : info.key!
      const mode = info.mode ?? 'exclusive'
      const done = (outcome: string, span: Span | undefined, hold?: unknown) => {
        const now = m ? performance.now() : 0
        const base = baseOf(kind, key)
        m?.acquire.record((now - start) / 1000, sets.acquire(base, mode, outcome))
        if (hold) {
          const locks = (hold as { locks?: readonly Fence[] }).locks
          if (locks) for (const l of locks) track(l, 'lock', l.key === key ? base : baseOf('lock', l.key), now)
          else track(hold as object, kind, base, now)
          if (kind === 'term') m?.terms.add(sets.of(undefined))
        }
        if (span) {
          span.setAttribute('zaris.acquire.outcome', outcome)
          span.end()
        }
      }
      const go = (span?: Span): Promise<T> =>
        run().then(
          (hold) => {
            if (hold === null) return done(o.wait > 0 ? 'timeout' : 'null', span), hold
            const token = (hold as Partial<Fence>).token
            if (span && token !== undefined) span.setAttribute('zaris.token', token)
            done('held', span, hold)
            return hold
          },
          (err: unknown) => {
            if (span) failed(span, err)
            done(o.signal?.aborted ? 'aborted' : 'error', span)
            throw err
          },
        )
      if (!tracer) return go()
      const attributes = keyAttrs({ 'zaris.store': sets.store, 'zaris.hold.kind': kind, 'zaris.lock.mode': mode, 'zaris.acquire.wait_ms': o.wait }, key)
      return tracer.startActiveSpan('zaris.acquire', { kind: SPAN_KIND.internal, attributes }, go)
    },

    release<T>(hold: Fence, run: () => Promise<T>): Promise<T> {
      if (!tracer) return run()
      const kind = holds.get(hold)?.kind ?? 'lock'
      const attributes = keyAttrs({ 'zaris.store': sets.store, 'zaris.hold.kind': kind, 'zaris.token': hold.token }, hold.key)
      return tracer.startActiveSpan('zaris.release', { kind: SPAN_KIND.internal, attributes }, (span: Span) =>
        run().then(
          (r) => {
            span.setAttribute('zaris.release.outcome', r === undefined || (r as { ok?: boolean }).ok ? 'released' : 'gone') // undefined: handed on to the next in line
            span.end()
            return r
          },
          (err: unknown) => {
            failed(span, err)
            span.end()
            throw err
          },
        ),
      )
    },

    holdEnded(hold: Fence, code: HoldEndCode): void {
      if (!m) return
      const t = holds.get(hold)
      const base = t?.attrs ?? baseOf('lock', hold.key)
      const reason = sets.hold(base, 'zaris.hold.end_reason', code.toLowerCase())
      m.ended.add(reason)
      if (!t) return
      holds.delete(hold)
      m.active.add(base, -1)
      m.held.record((performance.now() - t.since) / 1000, reason)
    },

    renewed(hold: Fence, ok: boolean): void {
      if (m) m.renewals.add(sets.hold(holds.get(hold)?.attrs ?? baseOf('lock', hold.key), 'zaris.renewal.outcome', ok ? 'ok' : 'failed'))
    },

    watched(backlog: number): void {
      m?.lag.record(backlog, sets.of(undefined))
    },
  }
}

/**
 * The adapter, its commits timed (`zaris.commit.duration`) and traced
 * (`zaris.commit` spans), its watches' reconnects counted
 * (`zaris.watch.reconnects`); every other member as it is.
 */
function timedAdapter(adapter: Adapter, sets: AttributeSets, m: Instruments | undefined, tracer: Tracer | undefined): Adapter {
  const db = DB_SYSTEMS[sets.store]
  const commit = (checks: Check[], ops: Op[], options?: CommitOptions) => {
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
    return adapter.commit(checks, ops, options).then(
      (r) => (done(r.ok ? 'ok' : 'conflict'), r),
      (err: unknown) => {
        done('error', err)
        throw err
      },
    )
  }
  // A watch's sink, with `reconnecting` counted (the adapter calls it when its stream to the store breaks).
  // An adapter tells every watch on the connection in one go: one break counts once, however many watch.
  let told = false
  const watch = (prefix: string, sink: WatchSink, fromRevision?: number) => {
    if (!m) return adapter.watch(prefix, sink, fromRevision)
    const counted: WatchSink = {
      event: (e) => sink.event(e),
      error: (e) => sink.error(e),
      reconnecting: () => {
        if (!told) {
          told = true
          queueMicrotask(() => (told = false))
          m.reconnects.add(1, sets.of(undefined))
        }
        sink.reconnecting?.()
      },
    }
    return adapter.watch(prefix, counted, fromRevision)
  }
  // Every other member read from the adapter itself, methods bound to it (adapters keep private fields).
  const bound = new Map<PropertyKey, unknown>([
    ['commit', commit],
    ['watch', watch],
  ])
  return new Proxy(adapter, {
    get(target, prop) {
      const b = bound.get(prop)
      if (b) return b
      const v = Reflect.get(target, prop, target)
      if (typeof v !== 'function') return v
      const f = (v as (...a: unknown[]) => unknown).bind(target)
      bound.set(prop, f)
      return f
    },
  })
}

/** Marks `span` failed with `err`, as the semantic conventions ask (`error.type`, status ERROR, the exception). */
function failed(span: Span, err: unknown): void {
  span.setAttribute('error.type', errorType(err))
  span.setStatus({ code: STATUS_ERROR, message: err instanceof Error ? err.message : String(err) })
  span.recordException(err instanceof Error ? err : String(err))
}

/**
 * `error.type`: an error's `code` (a zaris error's, or a system error's), else its name.
 * Read, not imported: this module imports nothing of zaris at run time, so a
 * build of `zaris/otel` shares no chunk with the rest (a shared chunk would
 * cost every page that imports `zaris` one more file).
 */
function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string') return code
  return err instanceof Error ? err.name : typeof err
}

/**
 * A key's hash for `zaris.key.hash`: 53 bits of cyrb53 as 14 hex digits.
 * Stable across processes and runtimes (no salt), so spans of one key match
 * wherever they come from; not a secret: a key that can be guessed can be
 * hashed and compared.
 *
 * @example
 * hashKey('lock:customer-4711') // 14 hex digits, the same in every process
 */
export function hashKey(key: string): string {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, '0')
}
