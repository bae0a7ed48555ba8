/**
 * Connection-string parsing. A URL names a store:
 *
 * - `zaris://inproc/<ns>` — memory, shared per process and namespace
 * - `zaris://idb/<ns>` — IndexedDB + BroadcastChannel, shared by an origin's tabs
 * - `zaris://host[:port][,host2[:port]…]/<ns>` — zaris nodes over HTTP (port 7861 by default);
 *   `http://` and `https://` name nodes the same way
 * - `redis://…?ns=<ns>`, `rediss://…` — Redis directly, from Node
 * - `etcd://host:2379[,host2:2379…]/<ns>`, `etcds://…` — etcd directly, from Node
 * - any scheme registered with `registerScheme`
 *
 * @module
 */
import { InvalidUrlError } from './errors'

/** What a connection string names. */
export type Target =
  | { kind: 'memory'; namespace: string; url: string }
  | { kind: 'indexeddb'; namespace: string; url: string }
  | { kind: 'http'; namespace: string; endpoints: string[]; url: string }
  | { kind: 'redis'; namespace: string; url: string }
  | { kind: 'etcd'; namespace: string; url: string }
  | { kind: 'custom'; scheme: string; url: string }

/** The port a zaris node listens on by default. */
export const DEFAULT_PORT = 7861

const NAMESPACE = /^[A-Za-z0-9._~-]{1,128}$/
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i
const HOST = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i

/**
 * Parses `url` into a {@link Target}, or throws an `InvalidUrlError` that
 * says what is wrong. `custom` lists the schemes registered by the user.
 *
 * @example
 * parseUrl('zaris://localhost:7861/demo') // { kind: 'http', endpoints: ['http://localhost:7861'], namespace: 'demo', … }
 */
export function parseUrl(url: unknown, custom: ReadonlySet<string> = new Set()): Target {
  if (typeof url !== 'string' || url.trim() === '') {
    throw new InvalidUrlError(`a connection string must be a non-empty string like zaris://inproc/demo, got ${typeof url === 'string' ? 'an empty string' : typeof url}`)
  }
  const match = SCHEME.exec(url)
  if (!match) throw new InvalidUrlError(`${JSON.stringify(url)} is not a connection string: it has no scheme (try zaris://inproc/${url})`)
  const scheme = match[1]!.toLowerCase()
  if (custom.has(scheme)) return { kind: 'custom', scheme, url }
  const rest = url.slice(match[0].length)

  switch (scheme) {
    case 'zaris':
    case 'http':
    case 'https': {
      const slash = rest.indexOf('/')
      const authority = slash === -1 ? rest : rest.slice(0, slash)
      const namespace = parseNamespace(url, slash === -1 ? '' : rest.slice(slash + 1))
      if (scheme === 'zaris' && authority === 'inproc') return { kind: 'memory', namespace, url }
      if (scheme === 'zaris' && authority === 'idb') return { kind: 'indexeddb', namespace, url }
      const protocol = scheme === 'https' ? 'https' : 'http'
      const endpoints = authority.split(',').map((host) => {
        const h = HOST.exec(host)
        const port = h?.[2] === undefined ? DEFAULT_PORT : Number(h[2])
        if (!h || port < 1 || port > 65535) throw new InvalidUrlError(`${JSON.stringify(url)}: ${JSON.stringify(host)} is not a host[:port]`)
        return `${protocol}://${h[1]!.toLowerCase()}:${port}`
      })
      return { kind: 'http', namespace, endpoints, url }
    }
    case 'redis':
    case 'rediss': {
      let parsed: URL
      try {
        parsed = new URL(url)
      } catch {
        throw new InvalidUrlError(`${JSON.stringify(url)} is not a valid Redis URL (redis://[user:pass@]host:port[/db]?ns=NAME)`)
      }
      const ns = parsed.searchParams.get('ns')
      if (ns === null) throw new InvalidUrlError(`${JSON.stringify(url)}: add ?ns=<namespace> to name the zaris namespace`)
      return { kind: 'redis', namespace: parseNamespace(url, ns), url }
    }
    case 'etcd':
    case 'etcds': {
      const path = rest.replace(/^[^/?#]*/, '')
      if (/^[?#]?$/.test(path) || rest.startsWith('/')) throw new InvalidUrlError(`${JSON.stringify(url)}: an etcd URL names its members and a namespace, as in etcd://127.0.0.1:2379/demo`)
      return { kind: 'etcd', namespace: parseNamespace(url, path.slice(1)), url }
    }
    default:
      throw new InvalidUrlError(
        `unknown scheme ${JSON.stringify(scheme + '://')} in ${JSON.stringify(url)}: use zaris://, http(s)://, redis(s)://, etcd(s):// or one registered with registerScheme()`,
      )
  }
}

function parseNamespace(url: string, path: string): string {
  const ns = path.split(/[?#]/, 1)[0]!.replace(/\/+$/, '')
  if (ns === '') throw new InvalidUrlError(`${JSON.stringify(url)} names no namespace: add one, as in zaris://inproc/demo`)
  if (!NAMESPACE.test(ns)) {
    throw new InvalidUrlError(`${JSON.stringify(url)}: namespace ${JSON.stringify(ns)} may use only letters, digits and . _ ~ - (at most 128)`)
  }
  return ns
}
