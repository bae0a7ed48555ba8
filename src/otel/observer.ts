/**
 * How zaris/otel observes one client from outside, through what the client
 * exposes — the core carries no hook for it:
 *
 * - its adapter's commits and watches (./adapter.ts);
 * - its acquire methods, wrapped on the client's own objects
 *   (`locks.acquire`, `leases.grant`, `semaphores.acquire`, an election's
 *   `campaign`), so `locks.run`, `semaphores.run` and `jobs.once`, which call
 *   them, are seen too: each acquire timed and traced as the active span;
 * - the handles they resolve: each one's `finish` (every end its holder asks
 *   for goes through it: release, revoke, `await using`, resign,
 *   `client.close()`) and `renew` (auto-renewal calls it too), wrapped on
 *   the handle;
 * - its `holdend` event, for a hold that ends otherwise (expired, stolen,
 *   lost);
 * - its `watch`, whose reader's `next()` calls give a watch's backlog.
 *
 * @module
 */
import type { Client } from '../core/client'
import type { Fence } from '../core/locks'
import { SPAN_KIND, type Attributes, type Span, type Tracer } from './api'
import { failed, observeAdapter, Reader } from './adapter'
import { hashKey } from './hash'
import { instrumentsOf, type Instruments } from './instruments'
import type { OtelOptions } from './options'
import { AttributeSets, type HoldKind } from './sets'

/** The version zaris reports as its meter's and tracer's. */
const VERSION = '0.1.0'

/** Store names where the adapter's name is not what an operator calls it. */
const STORE_NAMES: Record<string, string> = { http: 'node' }

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

/** Clients already observed: a second telemetry on one client is not taken. */
const clients = new WeakSet<Client>()

/** Observes `client` with `options`' providers (once; nothing without a provider). */
export function observe(client: Client, options: OtelOptions): void {
  const m = options.meterProvider ? instrumentsOf(options.meterProvider, VERSION) : undefined
  const tracer = options.tracerProvider?.getTracer('zaris', VERSION)
  if ((!m && !tracer) || clients.has(client)) return
  clients.add(client)
  const o = new Observer(client, options, m, tracer)
  const waitOf = (a: Asked) => (typeof a?.wait === 'number' ? a.wait : 0) // 0 is every method's default
  const { locks, leases, semaphores } = client
  const lock = locks.acquire.bind(locks)
  locks.acquire = ((keyOrKeys: string | readonly string[], a?: Asked) => {
    const many = Array.isArray(keyOrKeys)
    const key = many ? keyOrKeys.join(' ') : String(keyOrKeys)
    return o.acquire(many ? 'locks' : 'lock', key, a?.mode === 'shared' ? 'shared' : 'exclusive', waitOf(a), a?.signal, () => lock(keyOrKeys as string, a as never))
  }) as typeof locks.acquire
  const grant = leases.grant.bind(leases)
  leases.grant = ((key: string, a?: Asked) => o.acquire('lease', key, 'exclusive', waitOf(a), a?.signal, () => grant(key, a as never))) as typeof leases.grant
  const permit = semaphores.acquire.bind(semaphores)
  semaphores.acquire = ((key: string, a: Asked) => o.acquire('permit', key, 'exclusive', waitOf(a), a?.signal, () => permit(key, a as never))) as typeof semaphores.acquire
  const election = client.election.bind(client)
  client.election = (name, eo) => {
    const e = election(name, eo)
    const campaign = e.campaign.bind(e)
    e.campaign = (co) => o.acquire('term', name, 'exclusive', Infinity, co?.signal, () => campaign(co))
    return e
  }
  if (!m) return
  const watch = client.watch.bind(client)
  client.watch = (key, wo) => {
    const reader = new Reader(key, wo?.prefix === true)
    o.nextReader(reader)
    try {
      const w = watch(key, wo)
      const next = w.next.bind(w)
      w.next = () => (reader.calls++, next())
      return w
    } finally {
      o.nextReader(undefined)
    }
  }
}

/** What one client's telemetry keeps: its instruments, attribute sets, and the holds it follows. */
class Observer {
  readonly #m: Instruments | undefined
  readonly #tracer: Tracer | undefined
  readonly #sets: AttributeSets
  readonly #keys: 'plain' | 'hash' | 'none'
  readonly #group: ((key: string) => string) | undefined
  /** The holds being held, by key and token (what a `holdend` event names). */
  readonly #holds = new Map<string, Tracked>()
  /** Names the reader of the next watch the adapter is asked for. */
  readonly nextReader: (reader: Reader | undefined) => void

  constructor(client: Client, options: OtelOptions, m: Instruments | undefined, tracer: Tracer | undefined) {
    this.#m = m
    this.#tracer = tracer
    const adapter = client.adapter
    this.#sets = new AttributeSets(m?.sets ?? new Map(), options.store ?? STORE_NAMES[adapter.name] ?? adapter.name)
    this.#keys = options.keys ?? 'plain'
    this.#group = options.keyGroup
    this.nextReader = observeAdapter(adapter, this.#sets, m, tracer)
    client.addEventListener('holdend', (e) => this.#ended(e.detail, e.detail.reason.code))
  }

  /** Runs one acquire (`run`) of `kind` at `key`, timed and traced (the active span while it runs); resolves what it resolves. */
  acquire<T>(kind: HoldKind, key: string, mode: string, wait: number, signal: AbortSignal | undefined, run: () => Promise<T>): Promise<T> {
    const m = this.#m
    const start = m ? performance.now() : 0
    const done = (outcome: string, span: Span | undefined, hold?: unknown) => {
      const now = m ? performance.now() : 0
      const base = this.#base(kind, key)
      m?.acquire.record((now - start) / 1000, this.#sets.acquire(base, mode, outcome))
      if (hold) {
        const locks = (hold as { locks?: readonly Handle[] }).locks
        if (locks) for (const l of locks) this.#track(l, 'lock', l.key === key ? base : this.#base('lock', l.key), now)
        else this.#track(hold as Handle, kind, base, now)
        if (kind === 'term') m?.terms.add(this.#sets.of(undefined))
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
          if (hold === null) return done(kind === 'term' ? 'aborted' : wait > 0 ? 'timeout' : 'null', span), hold
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
    if (!this.#tracer) return go()
    const attributes = this.#keyAttrs({ 'zaris.store': this.#sets.store, 'zaris.hold.kind': kind, 'zaris.lock.mode': mode, 'zaris.acquire.wait_ms': wait }, key)
    return this.#tracer.startActiveSpan('zaris.acquire', { kind: SPAN_KIND.internal, attributes }, go)
  }

  /** Follows `hold` from its acquire to its end: its ends asked for by its holder traced, its renewals counted. */
  #track(hold: Handle, kind: HoldKind, attrs: Attributes, now: number): void {
    if (hold.held === false) return // it ended before its acquire resolved
    this.#holds.set(idOf(hold), { kind, attrs, since: now })
    this.#m?.active.add(attrs)
    const { finish, renew } = hold
    hold.finish = (reason = 'RELEASED') => {
      const run = () =>
        finish.call(hold, reason).then(
          (ok) => (ok && this.#ended(hold, reason, true), ok),
          (err: unknown) => {
            // Unknown whether the store deleted it: the holder let it go either way.
            this.#ended(hold, reason, true)
            throw err
          },
        )
      const tracer = this.#tracer
      if (!tracer) return run()
      const attributes = this.#keyAttrs({ 'zaris.store': this.#sets.store, 'zaris.hold.kind': kind, 'zaris.token': hold.token }, hold.key)
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
    const m = this.#m
    if (!m) return
    const renewed = (ok: boolean) => m.renewals.add(this.#sets.hold(attrs, 'zaris.renewal.outcome', ok ? 'ok' : 'failed'))
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

  /** `hold` ended for `code` (`RELEASED`, `EXPIRED`, …); `asked`: an end its holder asked for, counted only for a hold followed from its acquire. */
  #ended(hold: Fence, code: string, asked = false): void {
    const id = idOf(hold)
    const t = this.#holds.get(id)
    if (asked && !t) return
    this.#holds.delete(id)
    const m = this.#m
    if (!m) return
    const base = t?.attrs ?? this.#base('lock', hold.key)
    const reason = this.#sets.hold(base, 'zaris.hold.end_reason', code.toLowerCase())
    m.ended.add(reason)
    if (!t) return
    m.active.add(base, -1)
    m.held.record((performance.now() - t.since) / 1000, reason)
  }

  #base(kind: HoldKind, key: string): Attributes {
    return this.#sets.base(kind, this.#group?.(key))
  }

  /** `a` with the key's span attribute (the key, its hash, or none). */
  #keyAttrs(a: Attributes, key: string): Attributes {
    if (this.#keys === 'plain') a['zaris.key'] = key
    else if (this.#keys === 'hash') a['zaris.key.hash'] = hashKey(key)
    return a
  }
}

/** A hold's id among a client's: its key and token (a `holdend` event's detail names both). */
const idOf = (hold: Fence) => `${hold.key}\u0001${hold.token}`
