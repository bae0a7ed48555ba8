/**
 * Parses `file:///path/to/store.db?ns=NAME[&sync=full]`: the file (an
 * absolute path on this machine, percent-decoded), the namespace, and how
 * commits reach the disk. Loads nothing.
 *
 * @module
 */
import { InvalidUrlError } from '../../core/contract/errors'
import { parseNamespace } from '../../core/contract/url'

/** What a `file://` connection string names. */
export interface FileTarget {
  /** The SQLite file, an absolute path. */
  path: string
  /** The zaris namespace in the file (`?ns=`). */
  namespace: string
  /** `full`: every commit is synced to disk before it is answered; `normal` (default): at checkpoints. */
  sync: 'normal' | 'full'
}

const EXAMPLE = 'file:///var/lib/app/zaris.db?ns=demo'
const PARAMS = new Set(['ns', 'sync'])

/**
 * Parses a `file://` URL, or throws an `InvalidUrlError` that says what is wrong.
 *
 * @example
 * parseFileUrl('file:///tmp/zaris.db?ns=jobs') // { path: '/tmp/zaris.db', namespace: 'jobs', sync: 'normal' }
 */
export function parseFileUrl(url: string): FileTarget {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new InvalidUrlError(`${JSON.stringify(url)} is not a valid file URL (${EXAMPLE})`)
  }
  if (parsed.protocol !== 'file:') throw new InvalidUrlError(`${JSON.stringify(url)} is not a file:// URL`)
  // (file://localhost/x is file:///x to the URL parser: no host.)
  if (parsed.host !== '') {
    throw new InvalidUrlError(`${JSON.stringify(url)} names the host ${JSON.stringify(parsed.host)}: a file:// store is a file of this machine (file:///path/to/file.db)`)
  }
  let path: string
  try {
    path = decodeURIComponent(parsed.pathname)
  } catch {
    throw new InvalidUrlError(`${JSON.stringify(url)}: the path is not valid percent-encoding`)
  }
  // file:///C:/dir/x.db names C:/dir/x.db on Windows.
  if (/^\/[A-Za-z]:\//.test(path)) path = path.slice(1)
  if (path.endsWith('/') || path.includes('\0')) throw new InvalidUrlError(`${JSON.stringify(url)} names no file: end the path with the file's name, as in ${EXAMPLE}`)
  for (const name of parsed.searchParams.keys()) {
    if (!PARAMS.has(name)) throw new InvalidUrlError(`${JSON.stringify(url)}: unknown parameter ${JSON.stringify(name)} (a file:// URL takes ns and sync)`)
  }
  const ns = parsed.searchParams.get('ns')
  if (ns === null) throw new InvalidUrlError(`${JSON.stringify(url)}: add ?ns=<namespace> to name the zaris namespace, as in ${EXAMPLE}`)
  const sync = parsed.searchParams.get('sync') ?? 'normal'
  if (sync !== 'normal' && sync !== 'full') throw new InvalidUrlError(`${JSON.stringify(url)}: sync must be normal or full, got ${JSON.stringify(sync)}`)
  return { path, namespace: parseNamespace(url, ns, EXAMPLE), sync }
}
