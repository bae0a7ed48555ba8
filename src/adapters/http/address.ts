/**
 * Where a zaris node listens: its default port, and the node base URLs a
 * connection string names. No transport here, so a scheme table can parse
 * node URLs without loading the HTTP adapter.
 *
 * @module
 */
import { parseHosts, parseNamespace } from '../../core/contract/url'

/** The port a zaris node listens on by default. */
export const DEFAULT_PORT = 7861

/**
 * Parses `host[:port][,host2…]/<ns>` (what follows `scheme://`) into node base URLs and a namespace.
 *
 * @example
 * nodeAddress('zaris://h1,h2:7000/jobs', 'h1,h2:7000/jobs', 'http') // { endpoints: ['http://h1:7861', 'http://h2:7000'], namespace: 'jobs' }
 */
export function nodeAddress(url: string, rest: string, protocol: 'http' | 'https'): { endpoints: string[]; namespace: string } {
  const slash = rest.indexOf('/')
  const namespace = parseNamespace(url, slash === -1 ? '' : rest.slice(slash + 1), `zaris://localhost:${DEFAULT_PORT}/demo`)
  return { endpoints: parseHosts(url, slash === -1 ? rest : rest.slice(0, slash), protocol, DEFAULT_PORT), namespace }
}
