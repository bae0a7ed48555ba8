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
import type { Adapter, Check, CommitOptions, Op } from '../core/contract/adapter'
import type { Fence } from '../core/locks'
import type { AcquireInfo, HoldEndCode, HoldKind, Telemetry } from '../core/telemetry'
import { SPAN_KIND, STATUS_ERROR, type Attributes, type MeterProvider, type Span, type Tracer, type TracerProvider } from './api'
import { instrumentsOf, type Instruments } from './instruments'

export type { Attributes, Counter, Histogram, Meter, MeterProvider, Span, Tracer, TracerProvider } from './api'
export type { AcquireInfo, HoldEndCode, HoldKind, Telemetry } from '../core/telemetry'

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

/** What a hold was, from its acquire: its kind and when it began (ms, `performance.now()`). */
interface Tracked {
  kind: HoldKind
  since: number
}

/** Store names where the adapter's name is not what an operator calls it. */
const STORE_NAMES: Record<string, string> = { http: 'node' }
/** `db.system.name` of OpenTelemetry's semantic conventions, for stores that are databases. */
const DB_SYSTEMS: Record<string, string> = { redis: 'redis', etcd: 'etcd', postgres: 'postgresql', sqlite: 'sqlite' }

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
  let store = options.store ?? 'unknown'
  const holds = new WeakMap<object, Tracked>()

  /** Span attributes of a key. */
  const keyAttrs = (a: Attributes, key: string) => {
    if (keys === 'plain') a['zaris.key'] = key
    else if (keys === 'hash') a['zaris.key.hash'] = hashKey(key)
    return a
  }
  const metricAttrs = (kind: HoldKind, key: string): Attributes => {
    const a: Attributes = { 'zaris.store': store, 'zaris.hold.kind': kind }
    if (group) a['zaris.key.group'] = group(key)
    return a
  }
  const track = (hold: object, kind: HoldKind, key: string) => {
    if ((hold as { held?: boolean }).held === false) return // it ended before its acquire resolved
    holds.set(hold, { kind, since: performance.now() })
    m?.active.add(1, metricAttrs(kind, key))
  }

  return {
    adapter(adapter: Adapter): Adapter {
      if (options.store === undefined) store = STORE_NAMES[adapter.name] ?? adapter.name
      return m || tracer ? timedAdapter(adapter, store, m, tracer) : adapter
    },

    acquire<T>(info: AcquireInfo, run: () => Promise<T>): Promise<T> {
      const start = performance.now()
      const base = metricAttrs(info.kind, info.key)
      const done = (outcome: string, span: Span | undefined, err?: unknown) => {
        if (m) m.acquire.record((performance.now() - start) / 1000, { ...base, 'zaris.lock.mode': info.mode, 'zaris.acquire.outcome': outcome })
        span?.setAttribute('zaris.acquire.outcome', outcome)
        if (span && err !== undefined) failed(span, err)
        span?.end()
      }
      const go = (span?: Span): Promise<T> =>
        run().then(
          (hold) => {
            if (hold === null) return done(info.wait > 0 ? 'timeout' : 'null', span), hold
            const locks = (hold as { locks?: readonly Fence[] }).locks
            if (locks) for (const l of locks) track(l, 'lock', l.key)
            else track(hold as object, info.kind, info.key)
            if (info.kind === 'term') m?.terms.add(1, { 'zaris.store': store })
            const token = (hold as Partial<Fence>).token
            if (span && token !== undefined) span.setAttribute('zaris.token', token)
            done('held', span)
            return hold
          },
          (err: unknown) => {
            done(info.signal?.aborted ? 'aborted' : 'error', span, err)
            throw err
          },
        )
      if (!tracer) return go()
      const attributes = keyAttrs({ 'zaris.store': store, 'zaris.hold.kind': info.kind, 'zaris.lock.mode': info.mode, 'zaris.acquire.wait_ms': info.wait }, info.key)
      return tracer.startActiveSpan('zaris.acquire', { kind: SPAN_KIND.internal, attributes }, go)
    },

    release<T>(hold: Fence, run: () => Promise<T>): Promise<T> {
      if (!tracer) return run()
      const kind = holds.get(hold)?.kind ?? 'lock'
      const attributes = keyAttrs({ 'zaris.store': store, 'zaris.hold.kind': kind, 'zaris.token': hold.token }, hold.key)
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
      holds.delete(hold)
      const attrs = metricAttrs(t?.kind ?? 'lock', hold.key)
      const reason = { ...attrs, 'zaris.hold.end_reason': code.toLowerCase() }
      m.ended.add(1, reason)
      if (!t) return
      m.active.add(-1, attrs)
      m.held.record((performance.now() - t.since) / 1000, reason)
    },

    renewed(hold: Fence, ok: boolean): void {
      m?.renewals.add(1, { ...metricAttrs(holds.get(hold)?.kind ?? 'lock', hold.key), 'zaris.renewal.outcome': ok ? 'ok' : 'failed' })
    },
  }
}

/** The adapter, its commits timed (`zaris.commit.duration`) and traced (`zaris.commit` spans); every other member as it is. */
function timedAdapter(adapter: Adapter, store: string, m: Instruments | undefined, tracer: Tracer | undefined): Adapter {
  const db = DB_SYSTEMS[store]
  const commit = (checks: Check[], ops: Op[], options?: CommitOptions) => {
    const start = performance.now()
    const span = tracer?.startSpan('zaris.commit', {
      kind: SPAN_KIND.client,
      attributes: { 'zaris.store': store, 'db.operation.name': 'commit', 'db.operation.batch.size': ops.length, ...(db ? { 'db.system.name': db } : {}) },
    })
    const done = (outcome: string, err?: unknown) => {
      m?.commit.record((performance.now() - start) / 1000, { 'zaris.store': store, 'zaris.commit.outcome': outcome, ...(err === undefined ? {} : { 'error.type': errorType(err) }) })
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
  // Every other member read from the adapter itself, methods bound to it (adapters keep private fields).
  const bound = new Map<PropertyKey, unknown>()
  return new Proxy(adapter, {
    get(target, prop) {
      if (prop === 'commit') return commit
      const v = Reflect.get(target, prop, target)
      if (typeof v !== 'function') return v
      let b = bound.get(prop)
      if (!b) bound.set(prop, (b = (v as (...a: unknown[]) => unknown).bind(target)))
      return b
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
