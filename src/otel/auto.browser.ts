/**
 * What `connect` does for OpenTelemetry in a page's build: nothing but pass
 * on the telemetry it is given (`telemetry: otel(...)` from `zaris/otel`).
 * A page's bundle that does not use OpenTelemetry carries no bridge and no
 * import of it; `meterProvider` and `tracerProvider` alone are Node's
 * (docs/observability.md).
 *
 * @module
 */
import type { TelemetryOptions } from './options'

/** `options` as they are (a `telemetry` of `false` is no telemetry to the client). */
export const withTelemetry = <O extends TelemetryOptions>(options: O): O => options
