/**
 * What `connect` does for OpenTelemetry in a page's build: only the
 * telemetry it is given (`telemetry: otel(...)` from `zaris/otel`). A bundle
 * that does not use OpenTelemetry carries no bridge and no import of it, so
 * providers given alone are refused rather than ignored.
 *
 * @module
 */
import { InvalidArgumentError } from '../core/contract/errors'
import type { Telemetry } from '../core/telemetry'
import type { TelemetryOptions } from './options'

/** The telemetry a client made by `connect` gets (`undefined`: none). */
export async function telemetryFor(options: TelemetryOptions): Promise<Telemetry | undefined> {
  if (!options.telemetry && (options.meterProvider || options.tracerProvider)) throw new InvalidArgumentError("in a page, pass telemetry: otel({ meterProvider, tracerProvider }) from 'zaris/otel'")
  return options.telemetry || undefined
}
