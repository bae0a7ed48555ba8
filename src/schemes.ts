/**
 * The built-in schemes `connect` knows: a page's (memory, IndexedDB, zaris
 * nodes; `./schemes.browser`) and the stores reached from Node (Redis,
 * etcd, Postgres, a file shared by the processes of one machine). A build with the `browser` export condition uses `./schemes.browser`
 * instead of this file (see tsup.config.ts), so neither is even a chunk of a
 * web app. Each adapter is loaded by a dynamic `import()` when a URL of it is
 * opened; a new adapter adds its scheme here, and the core does not change.
 *
 * @module
 */
import { parseNamespace } from './core/contract/url'
import { InvalidUrlError } from './core/contract/errors'
import { parseEtcdUrl } from './adapters/etcd/url'
import { parsePostgresUrl, redactPostgresUrl } from './adapters/postgres/url'
import { parseFileUrl } from './adapters/file/url'
import type { BuiltInScheme, SchemeTable } from './scheme-types'
import { builtInSchemes as pageSchemes } from './schemes.browser'

/** `redis://[user:pass@]host:port[/db]?ns=<ns>`, `rediss://…`: Redis directly. */
const redis: BuiltInScheme = {
  parse(url, scheme) {
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      throw new InvalidUrlError(`${JSON.stringify(url)} is not a valid Redis URL (redis://[user:pass@]host:port[/db]?ns=NAME)`)
    }
    const ns = parsed.searchParams.get('ns')
    if (ns === null) throw new InvalidUrlError(`${JSON.stringify(url)}: add ?ns=<namespace> to name the zaris namespace`)
    const namespace = parseNamespace(url, ns, 'redis://127.0.0.1:6379/0?ns=demo')
    return {
      target: { scheme, kind: 'redis', url, namespace },
      open: async (options) => (await import('./adapters/redis')).fromUrl(url, namespace, options),
    }
  },
}

/** `etcd://[user:pass@]host:2379[,host2…]/<ns>`, `etcds://…`: etcd directly. */
const etcd: BuiltInScheme = {
  parse(url, scheme) {
    const { namespace } = parseEtcdUrl(url)
    return {
      target: { scheme, kind: 'etcd', url, namespace },
      open: async (options) => (await import('./adapters/etcd')).fromUrl(url, options),
    }
  },
}

/** `postgres://[user[:pass]@]host[:port]/db?ns=<ns>[&schema=<schema>]`, `postgresql://…`: Postgres directly. */
const postgres: BuiltInScheme = {
  parse(url, scheme) {
    const { namespace: ns } = parsePostgresUrl(url)
    if (ns === undefined) throw new InvalidUrlError(`${JSON.stringify(redactPostgresUrl(url))}: add ?ns=<namespace> to name the zaris namespace`)
    const namespace = parseNamespace(url, ns, 'postgres://app@127.0.0.1:5432/app?ns=demo')
    return {
      target: { scheme, kind: 'postgres', url, namespace },
      open: async (options) => (await import('./adapters/postgres')).fromUrl(url, options),
    }
  },
}

/** `file:///path/to/store.db?ns=<ns>[&sync=full]`: the processes of one machine, through one SQLite file. */
const file: BuiltInScheme = {
  parse(url, scheme) {
    const { namespace } = parseFileUrl(url)
    return {
      target: { scheme, kind: 'file', url, namespace },
      open: async () => (await import('./adapters/file')).fromUrl(url),
    }
  },
}

/** Every built-in scheme. */
export const builtInSchemes: SchemeTable = {
  ...pageSchemes,
  redis,
  rediss: redis,
  etcd,
  etcds: etcd,
  postgres,
  postgresql: postgres,
  file,
}

/** Built-in schemes of other runtimes: none, here. */
export const elsewhere: Readonly<Record<string, string>> = {}

export { DEFAULT_PORT } from './schemes.browser'
