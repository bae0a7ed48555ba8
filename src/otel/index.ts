/**
 * `zaris/otel`: a client's waits, holds, renewals and commits as
 * OpenTelemetry metrics and spans. `otel({ meterProvider, tracerProvider })`
 * makes the {@link Telemetry} that observes a client (`connect(url, {
 * telemetry })`, or `otel(...)(client)`); in Node, `connect` makes one by
 * itself when `@opentelemetry/api` is installed and a provider is registered
 * or given (docs/observability.md).
 *
 * It observes the client from outside, through what the client exposes:
 * its adapter's commits and watches (./adapter.ts), its acquire methods
 * (`locks.acquire`, `leases.grant`, `semaphores.acquire`, an election's
 * `campaign`: wrapped on the client's own objects, so `locks.run`,
 * `semaphores.run` and `jobs.once` are seen too), the handles they resolve
 * (each one's `finish`, the way every end its holder asks for goes, and
 * `renew`), its `watch`, and its `holdend` event for holds that end
 * otherwise. A client that is not observed runs no code of it.
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
import type { Client } from '../core/client'
import type { Fence } from '../core/locks'
import { SPAN_KIND, type Attributes, type MeterProvider, type Span, type TracerProvider } from './api'
import { failed, observeAdapter, Reader } from './adapter'
import { instrumentsOf } from './instruments'
import type { Telemetry } from './options'
import { AttributeSets, type HoldKind } from './sets'

export type { Attributes, Counter, Histogram, Meter, MeterProvider, Observable, ObservableResult, Span, Tracer, TracerProvider } from './api'
export type { Telemetry } from './options'
export type { HoldKind } from './sets'

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

/** A handle as the bridge sees it: a hold (its `finish` is protected in the core's types, a method all the same). */
interface Handle extends Fence {
  readonly held: boolean
  finish(reason?: 'RELEASED' | 'CLOSED'): Promise<boolean>
  renew(ttl?: number): Promise<boolean>
}

/** Options an acquire method takes, as far as the bridge reads them (the method checks them). */
type Asked = { mode?: unknown; wait?: unknown; signal?: AbortSignal } | undefined

/** Store names where the adapter's name is not what an operator calls it. */
const STORE_NAMES: Record<string, string> = { http: 'node' }

/** Clients already observed: a second telemetry on one client is not taken. */
const clients = new WeakSet<Client>()

/**
 * The telemetry that sends a client's metrics to `meterProvider` and spans to `tracerProvider`.
 *
 * @example
 * import { otel } from 'zaris/otel'
 * const client = await connect('zaris://idb/app', { telemetry: otel({ meterProvider, tracerProvider }) })
 */
export function otel(options: OtelOptions = {}): Telemetry {
  return (client) => observe(client, options)
}

function observe(client: Client, options: OtelOptions): void {
  const m = options.meterProvider ? instrumentsOf(options.meterProvider, VERSION) : undefined
  const tracer = options.tracerProvider?.getTracer('zaris', VERSION)
  if ((!m && !tracer) || clients.has(client)) return
  clients.add(client)
  const adapter = client.adapter
  const sets = new AttributeSets(m?.sets ?? new Map(), options.store ?? STORE_NAMES[adapter.name] ?? adapter.name)
  const nextReader = observeAdapter(adapter, sets, m, tracer)
  const keys = options.keys ?? 'plain'
  const group = options.keyGroup
  /** The holds being held, by key and token (what a `holdend` event names). */
  const holds = new Map<string, Tracked>()
  const idOf = (hold: Fence) => `${hold.key}\u0001${hold.token}`

  /** Span attributes of a key. */
  const keyAttrs = (a: Attributes, key: string) => {
    if (keys === 'plain') a['zaris.key'] = key
    else if (keys === 'hash') a['zaris.key.hash'] = hashKey(key)
    return a
  }
  const baseOf = (kind: HoldKind, key: string) => sets.base(kind, group?.(key))

  /** The hold ended for `code` (`RELEASED`, …); `known`: only if it is being followed (an end its holder asked for). */
  const ended = (hold: Fence, code: string, known = false) => {
    const id = idOf(hold)
    const t = holds.get(id)
    if (known && !t) return
    holds.delete(id)
    if (!m) return
    const base = t?.attrs ?? baseOf('lock', hold.key)
    const reason = sets.hold(base, 'zaris.hold.end_reason', code.toLowerCase())
    m.ended.add(reason)
    if (!t) return
    m.active.add(base, -1)
    m.held.record((performance.now() - t.since) / 1000, reason)
  }
  client.addEventListener('holdend', (e) => ended(e.detail, e.detail.reason.code))

  /** Follows `hold` from its acquire to its end: its releases traced, its renewals counted. */
  const track = (hold: Handle, kind: HoldKind, attrs: Attributes, now: number) => {
    if (hold.held === false) return // it ended before its acquire resolved
    holds.set(idOf(hold), { kind, attrs, since: now })
    m?.active.add(attrs)
    const { finish, renew } = hold
    hold.finish = (reason = 'RELEASED') => {
      const run = () =>
        finish.call(hold, reason).then(
          (ok) => (ok && ended(hold, reason, true), ok),
          (err: unknown) => {
            // Unknown whether the store deleted it: the holder let it go either way.
            ended(hold, reason, true)
            throw err
          },
        )
      if (!tracer) return run()
      const attributes = keyAttrs({ 'zaris.store': sets.store, 'zaris.hold.kind': holds.get(idOf(hold))?.kind ?? 'lock', 'zaris.token': hold.token }, hold.key)
      return tracer.startActiveSpan('zaris.release', { kind: SPAN_KIND.internal, attributes }, (span: Span) =>
        run().then(
          (ok) => {
            span.setAttribute('zaris.release.outcome', ok ? 'released' : 'gone')
            span.end()
            return ok
          },
          (err: unknown) => {
            failed(span, err)
            span.end()
            throw err
          },
        ),
      )
    }
    if (!m) return
    const renewed = (ok: boolean) => m.renewals.add(sets.hold(holds.get(idOf(hold))?.attrs ?? baseOf('lock', hold.key), 'zaris.renewal.outcome', ok ? 'ok' : 'failed'))
    hold.renew = (ttl) => {
      // A hold no longer held sends no renewal: it answers false at once.
      if (!hold.held) return renew.call(hold, ttl)
      return renew.call(hold, ttl).then(
        (ok) => (renewed(ok), ok),
        (err: unknown) => {
          renewed(false)
          throw err
        },
      )
    }
  }

  /** Runs one acquire (`run`) of `kind` at `key`, timed and traced; resolves what it resolves. */
  const acquire = <T>(kind: HoldKind, key: string, mode: string, wait: number, signal: AbortSignal | undefined, run: () => Promise<T>): Promise<T> => {
    const start = m ? performance.now() : 0
    const done = (outcome: string, span: Span | undefined, hold?: unknown) => {
      const now = m ? performance.now() : 0
      const base = baseOf(kind, key)
      m?.acquire.record((now - start) / 1000, sets.acquire(base, mode, outcome))
      if (hold) {
        const locks = (hold as { locks?: readonly Handle[] }).locks
        if (locks) for (const l of locks) track(l, 'lock', l.key === key ? base : baseOf('lock', l.key), now)
        else track(hold as Handle, kind, base, now)
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
          // A campaign resolves null only once its election or client closed: it was given up.
          if (hold === null) return done(wait === Infinity && kind === 'term' ? 'aborted' : wait > 0 ? 'timeout' : 'null', span), hold
          const token = (hold as Partial<Fence>).token
          if (span && token !== undefined) span.setAttribute('zaris.token', token)
          done('held', span, hold)
          return hold
        },
        (err: unknown) => {
          if (span) failed(span, err)
          done(signal?.aborted ? 'aborted' : 'error', span)
          throw err
        },
      )
    if (!tracer) return go()
    const attributes = keyAttrs({ 'zaris.store': sets.store, 'zaris.hold.kind': kind, 'zaris.lock.mode': mode, 'zaris.acquire.wait_ms': wait }, key)
    return tracer.startActiveSpan('zaris.acquire', { kind: SPAN_KIND.internal, attributes }, go)
  }
  /** The wait an acquire's options ask for (the method checks them; 0 is its default). */
  const waitOf = (o: Asked) => (typeof o?.wait === 'number' ? o.wait : 0)

  const { locks, leases, semaphores } = client
  const lock = locks.acquire.bind(locks)
  locks.acquire = ((keyOrKeys: string | readonly string[], o?: Asked) => {
    const many = Array.isArray(keyOrKeys)
    const key = many ? keyOrKeys.join(' ') : String(keyOrKeys)
    return acquire(many ? 'locks' : 'lock', key, o?.mode === 'shared' ? 'shared' : 'exclusive', waitOf(o), o?.signal, () => lock(keyOrKeys as string, o as never))
  }) as typeof locks.acquire
  const grant = leases.grant.bind(leases)
  leases.grant = ((key: string, o?: Asked) => acquire('lease', key, 'exclusive', waitOf(o), o?.signal, () => grant(key, o as never))) as typeof leases.grant
  const permit = semaphores.acquire.bind(semaphores)
  semaphores.acquire = ((key: string, o: Asked) => acquire('permit', key, 'exclusive', waitOf(o), o?.signal, () => permit(key, o as never))) as typeof semaphores.acquire
  const election = client.election.bind(client)
  client.election = (name, eo) => {
    const e = election(name, eo)
    const campaign = e.campaign.bind(e)
    e.campaign = (co) => acquire('term', name, 'exclusive', Infinity, co?.signal, () => campaign(co))
    return e
  }
  if (!m) return
  const watch = client.watch.bind(client)
  client.watch = (key, wo) => {
    const reader = new Reader(key, wo?.prefix === true)
    nextReader(reader)
    try {
      const w = watch(key, wo)
      const next = w.next.bind(w)
      w.next = () => (reader.calls++, next())
      return w
    } finally {
      nextReader(undefined)
    }
  }
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
