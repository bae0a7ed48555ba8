/**
 * `zaris/otel`: a client's waits, holds, renewals and commits as
 * OpenTelemetry metrics and spans. `otel({ meterProvider, tracerProvider })`
 * makes the {@link Telemetry} that observes a client (`connect(url, {
 * telemetry })`, or `otel(...)(client)`); in Node, `connect` makes one by
 * itself when `@opentelemetry/api` is installed and a provider is registered
 * or given (docs/observability.md).
 *
 * It observes the client from outside, through what the client exposes
 * (./observer.ts): the core calls nothing of it, and a client that is not
 * observed runs none of it.
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
import { observe } from './observer'
import type { OtelOptions, Telemetry } from './options'

export type { Attributes, Counter, Histogram, Meter, MeterProvider, Observable, ObservableResult, Span, Tracer, TracerProvider } from './api'
export type { OtelOptions, Telemetry } from './options'
export type { HoldKind } from './sets'
export { hashKey } from './hash'

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
