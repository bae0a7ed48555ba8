/**
 * The built-in schemes `connect` knows: a page's (memory, IndexedDB, zaris
 * nodes; `./schemes.browser`) and the stores reached from Node (Redis). A
 * build with the `browser` export condition uses `./schemes.browser` instead
 * of this file (see tsup.config.ts), so Redis is not even a chunk of a web
 * app. Each adapter is loaded by a dynamic `import()` when a URL of it is
 * opened; a new adapter adds its scheme here, and the core does not change.
 *
 * @module
 */
import { parseNamespace } from './core/url'
import { InvalidUrlError } from './core/errors'
import type { BuiltInScheme, SchemeTable } from './scheme'
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

/** Every built-in scheme. */
export const builtInSchemes: SchemeTable = {
  ...pageSchemes,
  redis,
  rediss: redis,
  // etcd: etcd, etcds: etcd — the etcd adapter's entry (branch h6-etcd): parseEtcdUrl, then import('./adapters/etcd')
}

/** Built-in schemes of other runtimes: none, here. */
export const elsewhere: Readonly<Record<string, string>> = {}

export { DEFAULT_PORT } from './schemes.browser'
