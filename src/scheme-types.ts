/**
 * The shapes `connect` works with: its options, a registered scheme's
 * factory, what a connection string names, and a built-in scheme.
 *
 * @module
 */
import type { Adapter } from './core/contract/adapter'
import type { ClientOptions } from './core/client'
import type { TelemetryOptions } from './otel/options'

/** Options of `connect`: the client's, its telemetry's, plus what adapters read. */
export interface ConnectOptions extends ClientOptions, TelemetryOptions {
  /** Bearer token for a zaris node started with `--token`. */
  token?: string
  /** Anything a custom adapter factory wants. */
  [option: string]: unknown
}

/** Builds the adapter for a URL of a registered scheme. */
export type AdapterFactory = (url: string, options: ConnectOptions) => Adapter | Promise<Adapter>

/**
 * What a connection string names, as `parseUrl` tells it.
 *
 * @example
 * const target: Target = { scheme: 'zaris', kind: 'memory', namespace: 'demo', url: 'zaris://inproc/demo' }
 */
export interface Target {
  /** The URL's scheme, lowercased. */
  scheme: string
  /** The store: `memory`, `indexeddb`, `http`, `redis`, `etcd`, `file` (built in), or `custom` (a scheme given to `registerScheme`). */
  kind: string
  /** The URL as given. */
  url: string
  /** The namespace, for built-in schemes. */
  namespace?: string
  /** Node base URLs, for `http`. */
  endpoints?: string[]
}

/** A URL a built-in scheme has checked: what it names, and how to open it. */
export interface Parsed {
  target: Target
  /** Loads the adapter's module (a dynamic import, so a chunk of its own) and opens the store. */
  open(options: ConnectOptions): Promise<Adapter>
}

/** A built-in scheme: checks its URLs at once, without loading any adapter. */
export interface BuiltInScheme {
  /** Checks `url` (`rest` is what follows `scheme://`); throws an `InvalidUrlError` that says what is wrong. */
  parse(url: string, scheme: string, rest: string): Parsed
}

/** Built-in schemes by name (lowercase, no `://`). */
export type SchemeTable = Readonly<Record<string, BuiltInScheme>>
