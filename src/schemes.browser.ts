/**
 * The built-in schemes a page can open: memory, IndexedDB and zaris nodes
 * over HTTP. Builds for the browser (the `browser` export condition: Vite,
 * webpack and esbuild apps) use this table in place of `./schemes`, so
 * nothing Node-only is even a chunk of a web app. Each adapter is loaded by a
 * dynamic `import()` when a URL of it is opened.
 *
 * @module
 */
import { DEFAULT_PORT, nodeAddress } from './adapters/http/address'
import { parseNamespace } from './core/contract/url'
import type { BuiltInScheme, Parsed, SchemeTable } from './scheme-types'

/** A zaris node over HTTP: `zaris://host[:port][,host2…]/<ns>`, `http://…`, `https://…`. */
function node(url: string, scheme: string, rest: string): Parsed {
  const { endpoints, namespace } = nodeAddress(url, rest, scheme === 'https' ? 'https' : 'http')
  return {
    target: { scheme, kind: 'http', url, namespace, endpoints },
    // httpAdapter checks the token.
    open: async (options) => (await import('./adapters/http/client')).httpAdapter({ endpoints, namespace, token: options.token }),
  }
}

/** `zaris://inproc/<ns>` (memory), `zaris://idb/<ns>` (IndexedDB), else a zaris node. */
const zaris: BuiltInScheme = {
  parse(url, scheme, rest) {
    const authority = rest.split('/', 1)[0]!
    if (authority !== 'inproc' && authority !== 'idb') return node(url, scheme, rest)
    const namespace = parseNamespace(url, rest.slice(authority.length + 1), `zaris://${authority}/demo`)
    if (authority === 'inproc') {
      return {
        target: { scheme, kind: 'memory', url, namespace },
        open: async (options) => (await import('./adapters/memory')).memoryAdapter({ namespace, clock: options.clock }),
      }
    }
    return {
      target: { scheme, kind: 'indexeddb', url, namespace },
      open: async () => (await import('./adapters/indexeddb')).openIndexedDb({ namespace }),
    }
  },
}

const http: BuiltInScheme = { parse: node }

/** The built-in schemes of a page. */
export const builtInSchemes: SchemeTable = { zaris, http, https: http }

/** Built-in schemes of other runtimes, named only so that a page's error says where they work. */
export const elsewhere: Readonly<Record<string, string>> = {
  redis: 'Node',
  rediss: 'Node',
  etcd: 'Node',
  etcds: 'Node',
  postgres: 'Node',
  postgresql: 'Node',
  file: 'Node',
}

export { DEFAULT_PORT }
