/**
 * The Redis connections of one adapter: opening them from a URL, running the
 * scripts (`functions.ts`), and keeping an idle Node process free to exit.
 *
 * An open socket keeps Node running, but an adapter that is doing nothing
 * must not (a process whose clients hold and watch nothing exits on its own).
 * So a socket the adapter owns is unref'd whenever no call is in flight, and
 * ref'd again for each call — re-applied on every reconnect, since ioredis
 * then opens a new socket.
 *
 * @module
 */
import type { Cluster, Redis, RedisOptions } from 'ioredis'
import { InvalidArgumentError, InvalidUrlError, UnauthorizedError, UnavailableError } from '../../core/contract/errors'
import { loadIoredis } from './load'
import { ScriptRunner } from './functions'

/** A Redis client the adapter can drive: an ioredis `Redis` or `Cluster`. */
export type RedisClient = Redis | Cluster

/** Defaults for connections the adapter opens; the caller's `redis` options override them. */
const DEFAULTS: RedisOptions = {
  lazyConnect: true,
  enableAutoPipelining: true,
  // A command queued while Redis is unreachable fails after this many reconnect attempts (~3 s).
  maxRetriesPerRequest: 10,
  // A commit cut off by a dropped connection is sent again after the reconnect; its
  // request id makes the second run answer what the first did instead of applying twice.
  autoResendUnfulfilledCommands: true,
}

/** A URL without its password, for messages. */
export function redact(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return '(an invalid URL)'
  }
}

/**
 * Parses `redis://[user:pass@]host:port[/db]?ns=NAME` (or `rediss://`): the
 * URL ioredis gets (without `ns`) and the namespace, if the URL names one.
 */
export function parseRedisUrl(url: string): { url: string; namespace: string | undefined } {
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
  u.searchParams.delete('ns')
  return { url: u.toString(), namespace }
}

/** Opens a connection to `url` and waits until Redis answers, or throws an `UnavailableError`. */
export async function openRedis(url: string, options: RedisOptions | undefined, connectionName: string): Promise<Redis> {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new InvalidArgumentError('redis options must be an object of ioredis options')
  }
  const Redis = await loadIoredis()
  const redis = new (Redis as unknown as new (url: string, options: RedisOptions) => Redis)(url, { ...DEFAULTS, connectionName, ...options, lazyConnect: true })
  // Later failures reach the caller through the commands; without a listener ioredis prints them.
  let cause: unknown
  const onError = (err: unknown) => (cause ??= err)
  redis.on('error', onError)
  try {
    await redis.connect()
  } catch (err) {
    redis.disconnect()
    cause ??= err
    const message = cause instanceof Error ? cause.message : String(cause)
    if (/WRONGPASS|NOAUTH|invalid (username|password)/i.test(message)) {
      throw new UnauthorizedError(`Redis at ${redact(url)} refused the credentials: ${message}`)
    }
    throw new UnavailableError(`cannot connect to Redis at ${redact(url)}: ${message}`, { cause })
  } finally {
    redis.off('error', onError)
  }
  redis.on('error', () => {})
  return redis
}

/**
 * A connection shared by every adapter of this process that opened the same
 * URL with the same options (as the memory adapter shares a store per
 * process): one socket pair per Redis instead of one per client, so commands
 * of many clients go out in the same pipelined writes, and each namespace has
 * one watch reader. `release()` by the last user closes it.
 */
export interface SharedConnection {
  readonly client: RedisClient
  /** Runs the scripts on `client`, as Redis Functions where it can. */
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
 * The shared connection to `url` with `options`, opened on first use. A
 * caller's options that cannot be compared (functions, sockets) get a
 * connection of their own.
 */
export async function shareUrl(url: string, options: RedisOptions | undefined, name: string): Promise<SharedConnection> {
  let key: string | undefined
  try {
    key = url + '\u0000' + JSON.stringify(options ?? {}, (_k, v: unknown) => {
      if (typeof v === 'function' || typeof v === 'symbol') throw new Error('not comparable')
      return v
    })
  } catch {
    key = undefined
  }
  if (key === undefined) {
    const own = wrap(await openRedis(url, options, name), true, () => {})
    own.users++
    return own.connection
  }
  let entry = shared.get(key)
  if (!entry) {
    const k = key
    entry = openRedis(url, options, name).then((redis) =>
      wrap(redis, true, () => {
        if (shared.get(k) === entry) shared.delete(k)
      }),
    )
    shared.set(key, entry)
    entry.catch(() => shared.delete(k))
  }
  const e = await entry
  // Its last user let it go while this call waited: open a new one.
  if (e.closed) return shareUrl(url, options, name)
  e.users++
  return e.connection
}

/** The shared use of a client the caller opened (never closed by zaris). */
export function shareClient(client: RedisClient): SharedConnection {
  let e = byClient.get(client)
  if (!e) byClient.set(client, (e = wrap(client, false, () => byClient.delete(client))))
  e.users++
  return e.connection
}

interface Entry {
  connection: SharedConnection
  users: number
  closed: boolean
}

function wrap(client: RedisClient, owned: boolean, forget: () => void): Entry {
  const hold = new SocketHold(owned ? (client as Redis) : undefined)
  const entry: Entry = {
    users: 0,
    closed: false,
    connection: {
      client,
      scripts: new ScriptRunner(client),
      owned,
      hold,
      spaces: new Map<string, unknown>(),
      async release() {
        if (--entry.users > 0) return
        entry.closed = true
        forget()
        if (!owned) return
        // QUIT is a call in flight like any other: without the hold, an idle process would exit before its answer.
        hold.hold()
        try {
          await client.quit()
        } catch {
          client.disconnect()
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
 * Cluster, or a client the user passed in) is left alone.
 */
export class SocketHold {
  readonly #redis: Redis | undefined
  #held = 0

  constructor(redis: Redis | undefined) {
    this.#redis = redis
    this.#redis?.on('connect', () => this.#apply())
    this.#redis?.on('ready', () => this.#apply())
    this.#apply()
  }

  hold(): void {
    if (this.#held++ === 0) this.#apply()
  }

  release(): void {
    if (--this.#held === 0) this.#apply()
  }

  #apply(): void {
    const stream = this.#redis?.stream as { ref?: () => void; unref?: () => void } | undefined
    if (this.#held > 0) stream?.ref?.()
    else stream?.unref?.()
  }
}
