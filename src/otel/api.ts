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
  /** Records one value. */
  record(value: number, attributes?: Attributes): void
}

/** A counter (or up-down counter) instrument. */
export interface Counter {
  /** Adds `value` (negative for an up-down counter going down). */
  add(value: number, attributes?: Attributes): void
}

/** Options of an instrument. */
export interface InstrumentOptions {
  description?: string
  unit?: string
  advice?: { explicitBucketBoundaries?: number[] }
}

/** What an observable instrument's callback reports to. */
export interface ObservableResult {
  /** Reports `value` for the series of `attributes`. */
  observe(value: number, attributes?: Attributes): void
}

/** An observable counter (or up-down counter): read by its callbacks when the SDK collects. */
export interface Observable {
  /** Adds a callback the SDK calls at each collection. */
  addCallback(callback: (result: ObservableResult) => void): void
}

/** A meter: makes instruments. */
export interface Meter {
  /** Makes a histogram. */
  createHistogram(name: string, options?: InstrumentOptions): Histogram
  /** Makes a counter. */
  createCounter(name: string, options?: InstrumentOptions): Counter
  /** Makes a counter whose totals its callbacks report. */
  createObservableCounter(name: string, options?: InstrumentOptions): Observable
  /** Makes an up-down counter whose values its callbacks report. */
  createObservableUpDownCounter(name: string, options?: InstrumentOptions): Observable
}

/**
 * Where zaris gets its meter: `metrics.getMeterProvider()` of
 * `@opentelemetry/api`, or an SDK's `MeterProvider`.
 */
export interface MeterProvider {
  /** The meter of the instrumentation `name`. */
  getMeter(name: string, version?: string): Meter
}

/** A span. */
export interface Span {
  /** Sets one attribute. */
  setAttribute(key: string, value: string | number | boolean): unknown
  /** Sets the status (`code` 2: error). */
  setStatus(status: { code: number; message?: string }): unknown
  /** Records an exception as an event of the span. */
  recordException(exception: unknown): void
  /** Ends the span. */
  end(): void
}

/** Options of a span. */
export interface SpanOptions {
  kind?: number
  attributes?: Attributes
}

/** A tracer: starts spans. */
export interface Tracer {
  /** Starts a span, a child of the active one. */
  startSpan(name: string, options?: SpanOptions): Span
  /** Starts a span and calls `fn` with it as the active span. */
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>
}

/**
 * Where zaris gets its tracer: `trace.getTracerProvider()` of
 * `@opentelemetry/api`, or an SDK's `TracerProvider`.
 */
export interface TracerProvider {
  /** The tracer of the instrumentation `name`. */
  getTracer(name: string, version?: string): Tracer
}

/** `SpanKind` values (the API's enum). */
export const SPAN_KIND = { internal: 0, client: 2 } as const
/** `SpanStatusCode.ERROR`. */
export const STATUS_ERROR = 2
