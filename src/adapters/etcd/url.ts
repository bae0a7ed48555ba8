/**
 * Parses `etcd://[user:pass@]host:2379[,host2:2379,…]/<ns>` (and `etcds://`
 * for TLS): the members to talk to, the namespace, and credentials.
 *
 * @module
 */
import { InvalidUrlError } from '../../core/contract/errors'

/** What an etcd connection string names. */
export interface EtcdTarget {
  /** `http://host:port` or `https://host:port`, one per member, in the order given. */
  hosts: string[]
  namespace: string
  /** etcd's password authentication, from the URL's user info. */
  auth?: { username: string; password: string }
}

const NAMESPACE = /^[A-Za-z0-9._~-]{1,128}$/
const HOST = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i
/** etcd's client port. */
export const DEFAULT_ETCD_PORT = 2379

/** A URL without its password, for messages. */
export function redactEtcdUrl(url: string): string {
  return url.replace(/^(etcds?:\/\/[^:/@]*):[^@/]*@/i, '$1:***@')
}

/**
 * Parses an etcd connection string, or throws an `InvalidUrlError` naming what is wrong.
 *
 * @example
 * parseEtcdUrl('etcd://10.0.0.1:2379,10.0.0.2:2379/jobs') // { hosts: ['http://10.0.0.1:2379', 'http://10.0.0.2:2379'], namespace: 'jobs' }
 */
export function parseEtcdUrl(url: string): EtcdTarget {
  const shown = JSON.stringify(redactEtcdUrl(String(url)))
  const m = /^(etcds?):\/\/([^/?#]*)(\/[^?#]*)?([?#].*)?$/i.exec(url)
  if (!m) throw new InvalidUrlError(`${shown} is not an etcd URL (etcd://host:2379[,host2:2379…]/<namespace>)`)
  const protocol = m[1]!.toLowerCase() === 'etcds' ? 'https' : 'http'
  let authority = m[2]!
  let auth: EtcdTarget['auth']
  const at = authority.lastIndexOf('@')
  if (at !== -1) {
    const info = authority.slice(0, at)
    authority = authority.slice(at + 1)
    const colon = info.indexOf(':')
    if (colon === -1) throw new InvalidUrlError(`${shown}: give user:password@, not only a user name`)
    try {
      auth = { username: decodeURIComponent(info.slice(0, colon)), password: decodeURIComponent(info.slice(colon + 1)) }
    } catch {
      throw new InvalidUrlError(`${shown}: the user info is not valid percent-encoding`)
    }
  }
  if (authority === '') throw new InvalidUrlError(`${shown} names no etcd member: give host:port`)
  const hosts = authority.split(',').map((host) => {
    const h = HOST.exec(host)
    const port = h?.[2] === undefined ? DEFAULT_ETCD_PORT : Number(h[2])
    if (!h || port < 1 || port > 65535) throw new InvalidUrlError(`${shown}: ${JSON.stringify(host)} is not a host[:port]`)
    return `${protocol}://${h[1]!.toLowerCase()}:${port}`
  })
  const namespace = (m[3] ?? '').slice(1).replace(/\/+$/, '')
  if (namespace === '') throw new InvalidUrlError(`${shown} names no namespace: add one, as in etcd://127.0.0.1:2379/demo`)
  if (!NAMESPACE.test(namespace)) {
    throw new InvalidUrlError(`${shown}: namespace ${JSON.stringify(namespace)} may use only letters, digits and . _ ~ - (at most 128)`)
  }
  const target: EtcdTarget = { hosts, namespace }
  if (auth) target.auth = auth
  return target
}
