/**
 * What `connect` does for OpenTelemetry in a page's build: nothing but hand
 * the client to the telemetry it is given (`telemetry: otel(...)` from `zaris/otel`).
 * A page's bundle that does not use OpenTelemetry carries no bridge and no
 * import of it; `meterProvider` and `tracerProvider` alone are Node's
 * (docs/observability.md).
 *
 * @module
 */
import type { Client } from '../core/client'
import type { TelemetryOptions } from './options'

/** `client`, observed by the telemetry given (none for `false`). */
export const withTelemetry = (client: Client, options: TelemetryOptions): Client => (options.telemetry && options.telemetry(client), client)
