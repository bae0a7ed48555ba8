/**
 * What `connect` does for OpenTelemetry in Node: the client's telemetry is
 * the one given (`telemetry`; `false` for none), else a bridge to the
 * providers given (`meterProvider`, `tracerProvider`), else — when
 * `@opentelemetry/api` is installed and a provider is registered with it —
 * a bridge to the registered ones; it observes the client once made. The API is loaded once, on the first
 * connect, and the bridge (./index.ts) only when it has somewhere to send;
 * nothing is recorded otherwise. A page's build has ./auto.browser.ts instead.
 *
 * @module
 */
import type { Client } from '../core/client'
import type { MeterProvider, TracerProvider } from './api'
import type { Telemetry, TelemetryOptions } from './options'

type Api = typeof import('@opentelemetry/api')

let api: Promise<Api | undefined> | undefined

/**
 * `client`, observed by the telemetry `options` choose (if any). Typed as
 * possibly absent because a page's build has none (./auto.browser.ts), so
 * that `connect` there carries not even the call.
 */
export const withTelemetry: ((client: Client, options: TelemetryOptions) => Promise<Client>) | undefined = observed

async function observed(client: Client, options: TelemetryOptions): Promise<Client> {
  ;(await telemetryFor(options))?.(client)
  return client
}

async function telemetryFor(options: TelemetryOptions): Promise<Telemetry | undefined> {
  if (options.telemetry !== undefined) return options.telemetry || undefined
  let { meterProvider, tracerProvider } = options
  if (!meterProvider && !tracerProvider) ({ meterProvider, tracerProvider } = await registered())
  if (!meterProvider && !tracerProvider) return undefined
  const { otel } = await import('./index')
  return otel({ meterProvider, tracerProvider })
}

/** The providers registered with `@opentelemetry/api`, if it is installed; none that are its no-ops. */
async function registered(): Promise<{ meterProvider?: MeterProvider; tracerProvider?: TracerProvider }> {
  const found = await (api ??= import('@opentelemetry/api').catch(() => undefined))
  if (!found) return {}
  const meters = found.metrics.getMeterProvider()
  const tracers = found.trace.getTracerProvider()
  // Unregistered, the API answers with no-ops: a no-op meter, and a proxy tracer with nothing behind it.
  const meterProvider = meters.getMeter('zaris').constructor === found.createNoopMeter().constructor ? undefined : meters
  const tracerProvider = tracers.getTracer('zaris') instanceof found.ProxyTracer ? undefined : tracers
  return { meterProvider, tracerProvider }
}
