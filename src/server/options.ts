/**
 * The options of a node's handler, and their checked, defaulted form that
 * the rest of the handler reads. Bad configuration fails here, at
 * construction, with a message that names the option.
 *
 * @module
 */
import type { Adapter } from '../core/contract/adapter'
import { InvalidArgumentError } from '../core/contract/errors'
import type { ParkLimits } from './parking'
import type { ReplayCacheOptions } from './replay-cache'

/** Options of {@link createHandler}. */
export interface HandlerOptions {
  /** The adapter that serves a namespace; called once per namespace, and closed by `close()`. */
  adapterFor(namespace: string): Adapter | Promise<Adapter>
  /**
   * The store's current revision and epoch (an id of this life of the store),
   * read right after a watch is established: the revision lets a client resume
   * a watch that has seen no event yet, the epoch tells it when the store it
   * resumes against is not the one it watched (reset, or a different store).
   * Optional; without it those two cases cannot be told.
   */
  positionOf?(namespace: string): StorePosition | Promise<StorePosition>
  /** Require `Authorization: Bearer <token>` on everything but `/healthz` and preflights. */
  token?: string
  /** Origins allowed to call from a browser (exact matches; never `*`). Default: none. */
  cors?: string[]
  /** Accept only these `Host` names (without port), against DNS rebinding. Default: any. */
  hosts?: string[]
  /** Largest request body in bytes. Default 64 KiB. */
  maxBodyBytes?: number
  /**
   * Most bytes of one `list` answer (its JSON); a page is cut short there and
   * says `more`. At least the body limit and 8 KiB, so any one entry fits. Default 1 MiB.
   */
  maxPageBytes?: number
  /** Most entries of one `list` answer, whatever the client asks. Default 1 000. */
  maxPageEntries?: number
  /** Most open watch streams; past it, 429. Default 1 000. */
  maxWatchers?: number
  /**
   * Most namespaces this node opens; a request for one more gets 429. Any
   * request opens its namespace, so without a cap an open node could be made
   * to hold an unbounded number of stores. Default 10 000.
   */
  maxNamespaces?: number
  /** Comment sent on quiet watch streams every this many ms. Default 15 000. */
  heartbeatMs?: number
  /** Bounds of the memory of request ids. */
  replay?: ReplayCacheOptions
  /** Bounds of the commits that wait for a change (`waitChange`); parking.ts has the defaults. */
  park?: Partial<ParkLimits>
  /** Where unexpected errors are reported (never with a token). Default: console.error. */
  log?: (line: string) => void
}

/** Where a store is: its revision, and the epoch that names this life of it. */
export interface StorePosition {
  /** The store's current revision. */
  revision: number
  /** An id of this life of the store: it changes when the store is reset or replaced. */
  epoch: string
}

/** {@link HandlerOptions} checked, with every default filled in. */
export interface Settings {
  adapterFor(namespace: string): Adapter | Promise<Adapter>
  positionOf: ((namespace: string) => StorePosition | Promise<StorePosition>) | undefined
  token: string | undefined
  origins: ReadonlySet<string>
  hosts: ReadonlySet<string> | undefined
  maxBodyBytes: number
  maxPageBytes: number
  maxPageEntries: number
  maxWatchers: number
  maxNamespaces: number
  heartbeatMs: number
  replay: ReplayCacheOptions | undefined
  park: Partial<ParkLimits> | undefined
  log: (line: string) => void
}

const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]']

/** The host names a loopback-bound node accepts: see {@link HandlerOptions.hosts}. */
export const loopbackHosts: readonly string[] = LOOPBACK_HOSTS

/** Checks `options` and fills in the defaults; throws `InvalidArgumentError` naming the option at fault. */
export function resolveOptions(options: HandlerOptions): Settings {
  if (typeof options?.adapterFor !== 'function') throw new InvalidArgumentError('createHandler: adapterFor(namespace) is required')
  for (const origin of options.cors ?? []) {
    if (!/^https?:\/\/[^/\s*]+$/i.test(origin)) {
      throw new InvalidArgumentError(`cors: ${JSON.stringify(origin)} is not an origin like http://localhost:5173 (no paths, no *)`)
    }
  }
  const maxBodyBytes = positive(options.maxBodyBytes, 64 * 1024, 'maxBodyBytes')
  const maxPageBytes = positive(options.maxPageBytes, Math.max(1024 * 1024, maxBodyBytes + 8 * 1024), 'maxPageBytes')
  if (maxPageBytes < maxBodyBytes + 8 * 1024) {
    throw new InvalidArgumentError(`maxPageBytes (${maxPageBytes}) must be at least maxBodyBytes + 8 KiB (${maxBodyBytes + 8 * 1024}), so that any one entry fits a page`)
  }
  return {
    adapterFor: options.adapterFor,
    positionOf: options.positionOf,
    token: options.token === undefined ? undefined : checkToken(options.token),
    origins: new Set(options.cors ?? []),
    hosts: options.hosts && new Set(options.hosts.map((h) => h.toLowerCase())),
    maxBodyBytes,
    maxPageBytes,
    maxPageEntries: positive(options.maxPageEntries, 1_000, 'maxPageEntries'),
    maxWatchers: positive(options.maxWatchers, 1_000, 'maxWatchers'),
    maxNamespaces: positive(options.maxNamespaces, 10_000, 'maxNamespaces'),
    heartbeatMs: positive(options.heartbeatMs, 15_000, 'heartbeatMs'),
    replay: options.replay,
    park: checkPark(options.park),
    log: options.log ?? ((line: string) => console.error(line)),
  }
}

/** `value`, checked to be a positive finite number, or `fallback` when undefined. */
export function positive(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidArgumentError(`${name} must be a positive number, got ${String(value)}`)
  }
  return value
}

function checkPark(park: Partial<ParkLimits> | undefined): Partial<ParkLimits> | undefined {
  if (park === undefined) return undefined
  const out: Partial<ParkLimits> = {}
  for (const name of ['maxParked', 'maxPerConnection', 'maxParkedBytes', 'maxWaitMs'] as const) {
    if (park[name] !== undefined) out[name] = positive(park[name], 1, `park.${name}`)
  }
  return out
}

function checkToken(token: unknown): string {
  if (typeof token !== 'string' || token.length < 8 || /\s/.test(token)) {
    throw new InvalidArgumentError('token must be a string of at least 8 characters without whitespace')
  }
  return token
}
