/**
 * What `connect` does for OpenTelemetry in a page's build: nothing. A page
 * observes a client itself, `otel({ meterProvider, tracerProvider })(client)`
 * with `otel` from `zaris/otel`; `connect`'s `telemetry`, `meterProvider` and
 * `tracerProvider` are Node's (docs/observability.md). So a page's bundle
 * carries no bridge, no import of it and no code for it, not even the call
 * that would hand a client to a telemetry given.
 *
 * @module
 */

/** None: `connect` leaves the client as it is (and a bundler drops the call, a constant `undefined`). */
export const withTelemetry = undefined
