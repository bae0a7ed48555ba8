/**
 * The part of OpenTelemetry's API (`@opentelemetry/api` 1.x) that zaris
 * calls, as structural types: a `MeterProvider` or `TracerProvider` of any
 * SDK fits them. Written out here so that zaris's declarations and code do
 * not import `@opentelemetry/api` (an optional peer): the bridge is handed
 * providers and calls their methods, nothing else.
 *
 * @module
 */

/** Attribute values as OpenTelemetry takes them. */
export type Attributes = Record<string, string | number | boolean | undefined>

/** A histogram instrument. */
export interface Histogram {
  record(value: number, attributes?: Attributes): void
}

/** A counter (or up-down counter) instrument. */
export interface Counter {
  add(value: number, attributes?: Attributes): void
}

/** Options of an instrument. */
export interface InstrumentOptions {
  description?: string
  unit?: string
  advice?: { explicitBucketBoundaries?: number[] }
}

/** A meter: makes instruments. */
export interface Meter {
  createHistogram(name: string, options?: InstrumentOptions): Histogram
  createCounter(name: string, options?: InstrumentOptions): Counter
  createUpDownCounter(name: string, options?: InstrumentOptions): Counter
}

/**
 * Where zaris gets its meter: `metrics.getMeterProvider()` of
 * `@opentelemetry/api`, or an SDK's `MeterProvider`.
 */
export interface MeterProvider {
  getMeter(name: string, version?: string): Meter
}

/** A span. */
export interface Span {
  setAttribute(key: string, value: string | number | boolean): unknown
  setStatus(status: { code: number; message?: string }): unknown
  recordException(exception: unknown): void
  end(): void
}

/** Options of a span. */
export interface SpanOptions {
  kind?: number
  attributes?: Attributes
}

/** A tracer: starts spans. */
export interface Tracer {
  startSpan(name: string, options?: SpanOptions): Span
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>
}

/**
 * Where zaris gets its tracer: `trace.getTracerProvider()` of
 * `@opentelemetry/api`, or an SDK's `TracerProvider`.
 */
export interface TracerProvider {
  getTracer(name: string, version?: string): Tracer
}

/** `SpanKind` values (the API's enum). */
export const SPAN_KIND = { internal: 0, client: 2 } as const
/** `SpanStatusCode.ERROR`. */
export const STATUS_ERROR = 2
