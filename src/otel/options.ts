/**
 * A client's telemetry, and the options of `connect` that choose it.
 *
 * @module
 */
import type { Client } from '../core/client'
import type { MeterProvider, TracerProvider } from './api'

/**
 * What observes a client from outside: called once with the client, right
 * after it is made, it wraps what the client already exposes (its adapter,
 * its acquire methods, the handles they return) and listens to its
 * `holdend` event. The core calls nothing of it. `otel(...)` from
 * `zaris/otel` makes one.
 *
 * @example
 * import { otel } from 'zaris/otel'
 * const client = new Client(memoryAdapter({ namespace: 'demo' }))
 * otel({ meterProvider })(client)
 */
export type Telemetry = (client: Client) => void

/** How `connect` sets up a client's telemetry (docs/observability.md). */
export interface TelemetryOptions {
  /**
   * The client's telemetry (`otel(...)` from `zaris/otel`, or one of your
   * own); `false` for none, even when OpenTelemetry has providers registered.
   * Default, in Node: a bridge to `meterProvider`/`tracerProvider`, else to
   * those registered with `@opentelemetry/api` when it is installed.
   */
  telemetry?: Telemetry | false
  /** Send metrics here (Node; in a page, use `telemetry: otel({ meterProvider })`). */
  meterProvider?: MeterProvider
  /** Send spans here (Node; in a page, use `telemetry: otel({ tracerProvider })`). */
  tracerProvider?: TracerProvider
}

/** Options of `otel` (`zaris/otel`). */
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
