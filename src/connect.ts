/**
 * `connect(url)` and `clients({...})`: from a connection string to a client.
 * Built-in adapters are loaded with dynamic `import()`, so a bundle carries
 * only the adapters an app connects to, each in its own chunk.
 *
 * @module
 */
import type { Adapter } from './core/adapter'
import { Client, type ClientOptions } from './core/client'
import { InvalidArgumentError, InvalidUrlError, UnsupportedError } from './core/errors'
import { parseUrl, type Target } from './core/url'

/** Options of {@link connect}: the client's, plus what adapters read. */
export interface ConnectOptions extends ClientOptions {
  /** Bearer token for a zaris node started with `--token`. */
  token?: string
  /** Anything a custom adapter factory wants. */
  [option: string]: unknown
}

/** Builds the adapter for a URL of a registered scheme. */
export type AdapterFactory = (url: string, options: ConnectOptions) => Adapter | Promise<Adapter>

const customSchemes = new Map<string, AdapterFactory>()
const builtInSchemes = new Set(['zaris', 'http', 'https', 'redis', 'rediss', 'etcd', 'etcds'])

/**
 * Lets `connect` open URLs of your own scheme with your adapter.
 *
 * @example
 * registerScheme('mystore', (url) => myAdapter(url))
 * const client = await connect('mystore://anything')
 */
export function registerScheme(scheme: string, factory: AdapterFactory): void {
  if (typeof scheme !== 'string' || !/^[a-z][a-z0-9+.-]*$/.test(scheme)) {
    throw new InvalidArgumentError(`scheme must be lowercase letters, digits, + . or - (starting with a letter), got ${JSON.stringify(scheme)}`)
  }
  if (builtInSchemes.has(scheme)) throw new InvalidArgumentError(`scheme ${JSON.stringify(scheme)} is built in and cannot be replaced`)
  if (typeof factory !== 'function') throw new InvalidArgumentError('factory must be a function (url, options) => Adapter')
  customSchemes.set(scheme, factory)
}

/**
 * Connects to the store a URL names.
 *
 * @example
 * const client = await connect('zaris://inproc/demo')
 * const lock = await client.locks.acquire('lock:nightly-report', { ttl: 30_000 })
 */
export async function connect(url: string, options: ConnectOptions = {}): Promise<Client> {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options must be an object')
  const target = parseUrl(url, new Set(customSchemes.keys()))
  const adapter = await openAdapter(target, options)
  try {
    return new Client(adapter, options)
  } catch (err) {
    await adapter.close()
    throw err
  }
}

async function openAdapter(target: Target, options: ConnectOptions): Promise<Adapter> {
  switch (target.kind) {
    case 'memory':
      return (await import('./adapters/memory')).memoryAdapter({ namespace: target.namespace, clock: options.clock })
    case 'custom':
      return customSchemes.get(target.scheme)!(target.url, options)
    case 'indexeddb':
      return (await import('./adapters/indexeddb')).fromUrl(target.namespace)
    case 'http':
      return (await import('./adapters/http/client')).fromUrl(target.endpoints, target.namespace, options)
    case 'redis':
      return (await import('./adapters/redis')).fromUrl(target.url, target.namespace, options)
    case 'etcd':
      return (await import('./adapters/etcd')).fromUrl(target.url, options)
    default:
      throw new InvalidUrlError(`cannot open ${JSON.stringify((target as Target).url)}`)
  }
}

/** Named stores, connected lazily. */
export interface Clients<Name extends string> {
  /** The client for `name`, connected on first use; the same client every time. */
  get(name: Name): Promise<Client>
  /** Closes every client that was connected. */
  close(): Promise<void>
}

/**
 * Names an app's stores once; each connects on its first `get` and is shared after.
 *
 * @example
 * const stores = clients({ demo: 'zaris://inproc/demo', jobs: { url: 'zaris://localhost:7861/jobs', options: { token } } })
 * const demo = await stores.get('demo')
 */
export function clients<Name extends string>(
  urls: Record<Name, string | { url: string; options?: ConnectOptions }>,
): Clients<Name> {
  if (typeof urls !== 'object' || urls === null) throw new InvalidArgumentError('clients() takes an object of name: url')
  const specs = new Map<string, { url: string; options?: ConnectOptions }>()
  for (const [name, spec] of Object.entries(urls) as Array<[string, string | { url: string; options?: ConnectOptions }]>) {
    const s = typeof spec === 'string' ? { url: spec } : spec
    parseUrl(s?.url, new Set(customSchemes.keys())) // fail now, not on first use
    specs.set(name, s)
  }
  const connected = new Map<string, Promise<Client>>()
  return {
    get(name) {
      const spec = specs.get(name)
      if (!spec) return Promise.reject(new InvalidArgumentError(`no store named ${JSON.stringify(name)}; known: ${[...specs.keys()].join(', ')}`))
      let client = connected.get(name)
      if (!client) {
        client = connect(spec.url, spec.options)
        // A failed connect is not remembered: the next get tries again.
        client.catch(() => connected.delete(name))
        connected.set(name, client)
      }
      return client
    },
    async close() {
      const all = [...connected.values()]
      connected.clear()
      await Promise.allSettled(all.map(async (c) => (await c).close()))
    },
  }
}
