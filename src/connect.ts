/**
 * `connect(url)` and `clients({...})`: from a connection string to a client.
 * The built-in schemes are a table (`./schemes`; a page's build uses
 * `./schemes.browser`), each adapter loaded with a dynamic `import()`, so a
 * bundle carries only the adapters an app connects to, each in its own chunk.
 * Other schemes come from {@link registerScheme}.
 *
 * @module
 */
import type { Adapter } from './core/contract/adapter'
import { Client } from './core/client'
import { InvalidArgumentError, InvalidUrlError } from './core/contract/errors'
import { splitScheme } from './core/contract/url'
import type { AdapterFactory, ConnectOptions, Parsed, Target } from './scheme-types'
import { builtInSchemes, elsewhere } from './schemes'
import { withTelemetry } from './otel/auto'

export type { AdapterFactory, ConnectOptions, Target } from './scheme-types'
export { DEFAULT_PORT } from './schemes'

const customSchemes = new Map<string, AdapterFactory>()

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
  if (Object.hasOwn(builtInSchemes, scheme)) throw new InvalidArgumentError(`scheme ${JSON.stringify(scheme)} is built in and cannot be replaced`)
  if (typeof factory !== 'function') throw new InvalidArgumentError('factory must be a function (url, options) => Adapter')
  customSchemes.set(scheme, factory)
}

/**
 * Says what a connection string names, or throws an `InvalidUrlError` that
 * says what is wrong. Loads no adapter.
 *
 * @example
 * parseUrl('zaris://localhost:7861/demo') // { scheme: 'zaris', kind: 'http', endpoints: ['http://localhost:7861'], namespace: 'demo', … }
 */
export function parseUrl(url: unknown): Target {
  return parse(url).target
}

function parse(url: unknown): Parsed {
  const { scheme, rest } = splitScheme(url, (name) => `zaris://inproc/${name}`)
  const u = url as string
  const custom = customSchemes.get(scheme)
  if (custom) return { target: { scheme, kind: 'custom', url: u }, open: async (options) => custom(u, options) }
  const builtIn = Object.hasOwn(builtInSchemes, scheme) ? builtInSchemes[scheme] : undefined
  if (builtIn) return builtIn.parse(u, scheme, rest)
  const where = Object.hasOwn(elsewhere, scheme) ? elsewhere[scheme] : undefined
  if (where) throw new InvalidUrlError(`${JSON.stringify(u)}: ${scheme}:// works in ${where}, not in a page (this is zaris's browser build)`)
  const known = Object.keys(builtInSchemes).map((s) => `${s}://`).join(', ')
  throw new InvalidUrlError(`unknown scheme ${JSON.stringify(scheme + '://')} in ${JSON.stringify(u)}: use ${known} or one registered with registerScheme()`)
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
  const adapter: Adapter = await parse(url).open(options)
  try {
    const client = new Client(adapter, options)
    // A page's build has no telemetry of connect's (./otel/auto.browser.ts).
    return withTelemetry ? await withTelemetry(client, options) : client
  } catch (err) {
    await adapter.close()
    throw err
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
    parse(s?.url) // fail now, not on first use
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
