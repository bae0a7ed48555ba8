/**
 * The Redis connections of one adapter: opening them from a URL (with the
 * client library `load.ts` picks), sharing them between the adapters of a
 * process, running the scripts (`functions.ts`), and keeping an idle Node
 * process free to exit. Which library carries the commands is `client.ts`'s
 * business; nothing here asks.
 *
 * An open socket keeps Node running, but an adapter that is doing nothing
 * must not (a process whose clients hold and watch nothing exits on its own).
 * So a socket the adapter owns is unref'd whenever no call is in flight, and
 * ref'd again for each call.
 *
 * @module
 */
import { InvalidArgumentError, InvalidUrlError, UnauthorizedError, UnavailableError } from '../../core/contract/errors'
import { redactUrl } from '../../core/contract/url'
import { LIBRARIES, linkClient, openLink, type LibraryOptions, type RedisLibrary } from './client'
import type { RedisLink } from './link'
import { describeError, loadLibrary } from './load'
import { ScriptRunner } from './functions'

export type { RedisClient } from './client'

/** A URL without its password, for messages. */
export const redact = redactUrl

/** A parsed Redis URL: what the library gets (without `ns` and `client`), the namespace and the library, where the URL names them. */
export interface RedisUrl {
  url: string
  namespace: string | undefined
  library: RedisLibrary | undefined
}

/**
 * Parses `redis://[user:pass@]host:port[/db]?ns=NAME&client=LIBRARY` (or
 * `rediss://`): `client` is `ioredis`, `redis` (node-redis) or `iovalkey`.
 */
export function parseRedisUrl(url: string): RedisUrl {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw new InvalidUrlError(`${JSON.stringify(redact(url))} is not a valid Redis URL (redis://[user:pass@]host:port[/db]?ns=NAME)`)
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new InvalidUrlError(`${JSON.stringify(redact(url))}: a Redis URL starts with redis:// or rediss://`)
  }
  if (u.pathname !== '' && u.pathname !== '/' && !/^\/\d+$/.test(u.pathname)) {
    throw new InvalidUrlError(`${JSON.stringify(redact(url))}: the path must be a database number, as in redis://host:6379/0`)
  }
  const namespace = u.searchParams.get('ns') ?? undefined
  const client = u.searchParams.get('client') ?? undefined
  if (client !== undefined && !(LIBRARIES as readonly string[]).includes(client)) {
    throw new InvalidUrlError(`${JSON.stringify(redact(url))}: client must be one of ${LIBRARIES.join(', ')} (redis is node-redis), got ${JSON.stringify(client)}`)
  }
  u.searchParams.delete('ns')
  u.searchParams.delete('client')
  return { url: u.toString(), namespace, library: client as RedisLibrary | undefined }
}

/** Opens a connection to `url` and waits until Redis answers, or throws an `UnavailableError` (`UnauthorizedError` for refused credentials). */
export async function openRedis(url: string, library: RedisLibrary | undefined, options: LibraryOptions | undefined, connectionName: string): Promise<RedisLink> {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new InvalidArgumentError('redis options must be an object of options for the client library')
  }
  const loaded = await loadLibrary(library)
  try {
    return await openLink(loaded.library, loaded.module, url, options, connectionName)
  } catch (cause) {
    const message = describeError(cause)
    if (/WRONGPASS|NOAUTH|invalid (username|password)/i.test(message)) {
      throw new UnauthorizedError(`Redis at ${redact(url)} refused the credentials: ${message}`)
    }
    throw new UnavailableError(`cannot connect to Redis at ${redact(url)} (with ${loaded.library}): ${message}`, { cause })
  }
}

/**
 * A connection shared by every adapter of this process that opened the same
 * URL with the same options (as the memory adapter shares a store per
 * process): one socket pair per Redis instead of one per client, so commands
 * of many clients go out in the same pipelined writes, and each namespace has
 * one watch reader. `release()` by the last user closes it.
 */
export interface SharedConnection {
  /** The connection, whatever library opened it. */
  readonly link: RedisLink
  /** Runs the scripts on `link`, as Redis Functions where it can. */
  readonly scripts: ScriptRunner
  /** Whether zaris opened it (and so closes it and manages its socket). */
  readonly owned: boolean
  readonly hold: SocketHold
  /** Per-namespace state that lives as long as the connection. */
  readonly spaces: Map<string, unknown>
  release(): Promise<void>
}

const shared = new Map<string, Promise<Entry>>()
const byClient = new WeakMap<object, Entry>()

/**
 * The shared connection to `url` with `library` (the first installed, if
 * undefined) and `options`, opened on first use. A caller's options that
 * cannot be compared (functions, sockets) get a connection of their own.
 */
export async function shareUrl(url: string, library: RedisLibrary | undefined, options: LibraryOptions | undefined, name: string): Promise<SharedConnection> {
  let key: string | undefined
  try {
    key = `${library ?? ''}\u0000${url}\u0000${JSON.stringify(options ?? {}, (_k, v: unknown) => {
      if (typeof v === 'function' || typeof v === 'symbol') throw new Error('not comparable')
      return v
    })}`
  } catch {
    key = undefined
  }
  if (key === undefined) {
    const own = wrap(await openRedis(url, library, options, name), true, () => {})
    own.users++
    return own.connection
  }
  let entry = shared.get(key)
  if (!entry) {
    const k = key
    entry = openRedis(url, library, options, name).then((link) =>
      wrap(link, true, () => {
        if (shared.get(k) === entry) shared.delete(k)
      }),
    )
    shared.set(key, entry)
    entry.catch(() => shared.delete(k))
  }
  const e = await entry
  // Its last user let it go while this call waited: open a new one.
  if (e.closed) return shareUrl(url, library, options, name)
  e.users++
  return e.connection
}

/** The shared use of a client the caller opened (never closed by zaris); refuses anything that is not a client it knows. */
export function shareClient(client: object): SharedConnection {
  let e = byClient.get(client)
  if (!e) byClient.set(client, (e = wrap(linkClient(client), false, () => byClient.delete(client))))
  e.users++
  return e.connection
}

interface Entry {
  connection: SharedConnection
  users: number
  closed: boolean
}

function wrap(link: RedisLink, owned: boolean, forget: () => void): Entry {
  const hold = new SocketHold(owned ? link : undefined)
  const entry: Entry = {
    users: 0,
    closed: false,
    connection: {
      link,
      scripts: new ScriptRunner(link),
      owned,
      hold,
      spaces: new Map<string, unknown>(),
      async release() {
        if (--entry.users > 0) return
        entry.closed = true
        forget()
        if (!owned) return link.detach()
        // QUIT is a call in flight like any other: without the hold, an idle process would exit before its answer.
        hold.hold()
        try {
          await link.close()
        } finally {
          hold.release()
        }
      },
    },
  }
  return entry
}

/**
 * Ref/unref control of a connection's socket: `hold()` while a call is in
 * flight, `release()` after. A connection the adapter does not own (a
 * client the user passed in) is left alone; so is a cluster.
 */
export class SocketHold {
  readonly #link: RedisLink | undefined
  #held = 0

  constructor(link: RedisLink | undefined) {
    this.#link = link
    this.#link?.keepAlive(false)
  }

  hold(): void {
    if (this.#held++ === 0) this.#link?.keepAlive(true)
  }

  release(): void {
    if (--this.#held === 0) this.#link?.keepAlive(false)
  }
}
