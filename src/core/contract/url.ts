/**
 * Connection-string pieces every scheme shares: the scheme, a namespace, a
 * list of `host[:port]`. Which schemes exist and what each opens is not the
 * core's business: built-in ones are listed in `src/schemes.ts` (and
 * `src/schemes.browser.ts`), others come from `registerScheme`.
 *
 * @module
 */
import { InvalidUrlError } from './errors'

const NAMESPACE = /^[A-Za-z0-9._~-]{1,128}$/
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i
const HOST = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i

/** What a namespace may be: letters, digits and `. _ ~ -`, 1 to 128 of them. */
export const NAMESPACE_RULE = 'letters, digits and . _ ~ - (at most 128)'

/**
 * Splits `url` into its lowercased scheme and what follows `://`, or throws
 * an `InvalidUrlError` that says what is wrong (`suggest` turns a URL with no
 * scheme into one to try).
 *
 * @example
 * splitScheme('Zaris://inproc/demo') // { scheme: 'zaris', rest: 'inproc/demo' }
 */
export function splitScheme(url: unknown, suggest?: (url: string) => string): { scheme: string; rest: string } {
  if (typeof url !== 'string' || url.trim() === '') {
    throw new InvalidUrlError(`a connection string must be a non-empty string, got ${typeof url === 'string' ? 'an empty string' : typeof url}`)
  }
  const match = SCHEME.exec(url)
  if (!match) throw new InvalidUrlError(`${JSON.stringify(url)} is not a connection string: it has no scheme (try ${suggest ? suggest(url) : 'scheme://…'})`)
  return { scheme: match[1]!.toLowerCase(), rest: url.slice(match[0].length) }
}

/**
 * Checks the namespace a URL's path names (trailing slashes, query and
 * fragment dropped); `example` is shown when it is missing.
 *
 * @example
 * parseNamespace('mystore://x/jobs', 'jobs', 'mystore://x/demo') // 'jobs'
 */
export function parseNamespace(url: string, path: string, example: string): string {
  const ns = path.split(/[?#]/, 1)[0]!.replace(/\/+$/, '')
  if (ns === '') throw new InvalidUrlError(`${JSON.stringify(url)} names no namespace: add one, as in ${example}`)
  if (!NAMESPACE.test(ns)) throw new InvalidUrlError(`${JSON.stringify(url)}: namespace ${JSON.stringify(ns)} may use only ${NAMESPACE_RULE}`)
  return ns
}

/**
 * Parses a comma-separated `host[:port]` list into `protocol://host:port`
 * base URLs (hosts lowercased, `defaultPort` where none is given).
 *
 * @example
 * parseHosts('mystore://h1:7000,H2/ns', 'h1:7000,H2', 'http', 80) // ['http://h1:7000', 'http://h2:80']
 */
export function parseHosts(url: string, authority: string, protocol: string, defaultPort: number): string[] {
  return authority.split(',').map((host) => {
    const h = HOST.exec(host)
    const port = h?.[2] === undefined ? defaultPort : Number(h[2])
    if (!h || port < 1 || port > 65535) throw new InvalidUrlError(`${JSON.stringify(url)}: ${JSON.stringify(host)} is not a host[:port]`)
    return `${protocol}://${h[1]!.toLowerCase()}:${port}`
  })
}

/** A URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return '(an invalid URL)'
  }
}
