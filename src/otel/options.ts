/**
 * The options of `connect` that choose a client's telemetry.
 *
 * @module
 */
import type { Telemetry } from '../core/telemetry'
import type { MeterProvider, TracerProvider } from './api'

/** How `connect` sets up a client's telemetry (docs/observability.md). */
export interface TelemetryOptions {
  /**
   * The client's telemetry (`otel(...)` from `zaris/otel`, or hooks of your
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
