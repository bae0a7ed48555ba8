/**
 * The one place that knows which Redis client library carries the adapter's
 * commands: ioredis and iovalkey (one API: `Redis` and `Cluster`), and
 * node-redis v5 and v6 (`createClient`, `createCluster`). The rest of the
 * adapter speaks to a {@link RedisLink} and never asks which.
 *
 * What a link makes the same for every library:
 * - **Replies** come as RESP2 shapes: strings, numbers, arrays, `null`.
 *   node-redis is asked for its default types on every call (a client's own
 *   `typeMapping` — Buffers, Maps — does not reach the adapter), and an
 *   `XREAD` answered as a RESP3 map (node-redis v6 speaks RESP3 by default)
 *   is read the same as the RESP2 array.
 * - **Errors**: an error reply of Redis rejects with an `Error` whose
 *   `name` is `ReplyError` (ioredis's own; node-redis's `ErrorReply` is
 *   renamed), anything else (a dropped connection, a closed client) as the
 *   library raised it; `load.ts` turns both into zaris errors.
 * - **Resending**: a command cut off by a dropped connection is sent again
 *   after the reconnect, for up to {@link RESEND_WINDOW_MS}. ioredis does it
 *   itself (`autoResendUnfulfilledCommands`); for node-redis, which rejects
 *   what was in flight, the link does. Every commit carries a request id, so
 *   a resent one is answered, not applied twice.
 * - **Scripts** go by `EVALSHA`, with `EVAL` for `NOSCRIPT` (`link.ts`).
 *
 * @module
 */
import { InvalidArgumentError, UnsupportedError } from '../../core/contract/errors'
import { evalScript, KeepAlive, onBreak, RESEND_WINDOW_MS, streamEntries, type LuaScript, type RedisLink } from './link'

/** The client libraries a `redis://` URL can open, in the order one is picked when the URL names none. */
export const LIBRARIES = ['ioredis', 'redis', 'iovalkey'] as const

/** A client library, by its npm name (`redis` is node-redis). */
export type RedisLibrary = (typeof LIBRARIES)[number]

/**
 * A Redis client you opened yourself: an ioredis or iovalkey `Redis` or
 * `Cluster`, or a node-redis client from `createClient()` or
 * `createCluster()`, already connected (`await client.connect()`).
 */
export type RedisClient = IoredisClient | NodeRedisClient

/** An ioredis (5, 6) or iovalkey `Redis` or `Cluster`, as far as zaris needs to recognise one. */
export interface IoredisClient {
  /** Sends any command: how the adapter sends its own. */
  call(...args: never[]): Promise<unknown>
  /** Present on every ioredis client: how the adapter tells one from a node-redis client. */
  defineCommand(...args: never[]): unknown
  /** Opens a second connection like this one: the adapter's watch reader. */
  duplicate(...args: never[]): unknown
}

/** A node-redis (5, 6) client or cluster, as far as zaris needs to recognise one. */
export interface NodeRedisClient {
  /** Sends any command: how the adapter sends its own. */
  sendCommand(...args: never[]): Promise<unknown>
  /** Makes a second client like this one: the adapter's watch reader. */
  duplicate(...args: never[]): unknown
  /** Whether it is connected (`connect()` was called): the adapter takes only an open client. */
  readonly isOpen: boolean
}

/** How often a call that found Redis loading its data is sent again. */
const LOADING_POLL_MS = 100

/** Reconnect delays after a connection that worked drops: ioredis's default, for every library. */
const reconnectDelay = (attempt: number) => Math.min(attempt * 50, 2_000)

/** The link of a client the caller opened: the library is told by the object's shape. */
export function linkClient(client: unknown): RedisLink {
  const c = client as Record<string, unknown> | null
  if (typeof c !== 'object' || c === null) throw new InvalidArgumentError(CLIENT_EXPECTED)
  if (typeof c.call === 'function' && typeof c.defineCommand === 'function') return new IoredisLink(c as unknown as IoredisLike)
  if (typeof c.sendCommand === 'function' && (typeof c.getSentinelNode === 'function' || 'totalClients' in c)) {
    throw new InvalidArgumentError('client: a node-redis Sentinel or pool is not supported; pass a client from createClient() or createCluster()')
  }
  if (typeof c.sendCommand === 'function' && typeof c.duplicate === 'function' && 'isOpen' in c) {
    if (!c.isOpen) throw new InvalidArgumentError('client: the node-redis client is not open; call `await client.connect()` first')
    return new NodeRedisLink(c as unknown as NodeRedisLike, 'masters' in c && typeof c.nodeClient === 'function', 'user')
  }
  throw new InvalidArgumentError(CLIENT_EXPECTED)
}

const CLIENT_EXPECTED = 'client must be an ioredis or iovalkey Redis or Cluster, or a node-redis client from createClient() or createCluster()'

/**
 * Opens a connection to `url` with `library`'s module `mod` (from
 * `load.ts`) and the caller's options for that library, and resolves once
 * Redis answers; a failed first attempt rejects with the library's error
 * (nothing retries a connection that never worked).
 */
export async function openLink(library: RedisLibrary, mod: LoadedModule, url: string, options: LibraryOptions | undefined, name: string): Promise<RedisLink> {
  return library === 'redis' ? openNodeRedis(mod, url, options, name) : openIoredis(mod, url, options, name)
}

/** A library's exports, with CommonJS's `default` as `inner`. */
export interface LoadedModule {
  mod: Record<string, unknown>
  inner: Record<string, unknown> | undefined
}

/** Options of the library that opens a URL's connection (ioredis `RedisOptions`, node-redis `createClient` options). */
export type LibraryOptions = { readonly [option: string]: unknown }

/** The library's entry point, or an error that says the module is not the library. */
export function entryOf(library: RedisLibrary, { mod, inner }: LoadedModule): (...args: never[]) => unknown {
  const found = library === 'redis' ? (mod.createClient ?? inner?.createClient) : (mod.Redis ?? inner?.Redis ?? inner?.default ?? inner)
  if (typeof found !== 'function') throw new UnsupportedError(`the module loaded as ${library} does not export ${library === 'redis' ? 'createClient' : 'the Redis class'}`)
  return found as (...args: never[]) => unknown
}

// ---------------------------------------------------------------------------
// ioredis and iovalkey

interface IoredisLike {
  call(command: string, ...args: Array<string | number>): Promise<unknown>
  duplicate(overrides?: object): IoredisLike
  subscribe(channel: string): Promise<unknown>
  connect(): Promise<void>
  quit(): Promise<unknown>
  disconnect(): void
  on(event: string, listener: (...args: unknown[]) => void): unknown
  off(event: string, listener: (...args: unknown[]) => void): unknown
  readonly isCluster?: boolean
  readonly stream?: { ref?: () => void; unref?: () => void }
}

/** Defaults for connections zaris opens; the caller's options override them. */
const IOREDIS_DEFAULTS = {
  enableAutoPipelining: true,
  // A command queued while Redis is unreachable fails after this many reconnect attempts (~3 s: RESEND_WINDOW_MS).
  maxRetriesPerRequest: 10,
  // A commit cut off by a dropped connection is sent again after the reconnect (its request id makes that safe).
  autoResendUnfulfilledCommands: true,
}

async function openIoredis(mod: LoadedModule, url: string, options: LibraryOptions | undefined, connectionName: string): Promise<RedisLink> {
  const Redis = entryOf('ioredis', mod) as unknown as new (url: string, options: object) => IoredisLike
  const redis = new Redis(url, { ...IOREDIS_DEFAULTS, connectionName, ...options, lazyConnect: true })
  // Later failures reach the caller through the commands; without a listener ioredis prints them.
  let cause: unknown
  const onError = (err: unknown) => (cause ??= err)
  redis.on('error', onError)
  try {
    await redis.connect()
  } catch (err) {
    redis.disconnect()
    throw cause ?? err
  } finally {
    redis.off('error', onError)
  }
  redis.on('error', () => {})
  return new IoredisLink(redis)
}

class IoredisLink implements RedisLink {
  readonly library = 'ioredis'
  readonly cluster: boolean
  readonly #client: IoredisLike
  readonly #alive: KeepAlive

  constructor(client: IoredisLike) {
    this.#client = client
    this.cluster = client.isCluster === true
    this.#alive = new KeepAlive(client, (on) => (on ? client.stream?.ref?.() : client.stream?.unref?.()))
  }

  call(_key: string | undefined, args: ReadonlyArray<string | number>): Promise<unknown> {
    // ioredis routes a cluster's command by the keys it finds in it (EVALSHA's and FCALL's included).
    return this.#client.call(...(args as [string, ...Array<string | number>]))
  }

  evalScript(script: LuaScript, numberOfKeys: number, keysAndArgs: ReadonlyArray<string | number>): Promise<unknown> {
    return evalScript(this, script, numberOfKeys, keysAndArgs)
  }

  async xread(key: string, afterId: string, count: number, blockMs: number): Promise<Array<[string, string[]]> | null> {
    return streamEntries(await this.call(key, ['XREAD', 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', key, afterId]))
  }

  duplicate(): RedisLink {
    const client = this.#client
    // XREAD BLOCK holds up every other command on its connection; this one waits through outages, never failing a read.
    const reader = this.cluster ? client.duplicate() : client.duplicate({ maxRetriesPerRequest: null, enableAutoPipelining: false, lazyConnect: false })
    reader.on('error', () => {})
    return new IoredisLink(reader)
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    // ioredis subscribes again after a reconnect by itself.
    this.#client.on('message', (ch, message) => ch === channel && onMessage(message as string))
    await this.#client.subscribe(channel)
  }

  onBreak(fn: () => void): void {
    onBreak(this.#client, fn)
  }

  keepAlive(on: boolean): void {
    // ioredis opens a new socket on every reconnect: the setting is applied to each.
    if (!this.cluster) this.#alive.set(on)
  }

  async close(): Promise<void> {
    try {
      await this.#client.quit()
    } catch {
      this.#client.disconnect()
    }
  }

  destroy(): void {
    this.#client.disconnect()
  }

  detach(): void {}
}

// ---------------------------------------------------------------------------
// node-redis

interface NodeRedisLike {
  sendCommand(...args: unknown[]): Promise<unknown>
  duplicate(overrides?: object): NodeRedisLike
  subscribe(channel: string, listener: (message: string) => void): Promise<unknown>
  connect(): Promise<unknown>
  close(): Promise<void>
  destroy(): void
  ref?(): void
  unref?(): void
  on(event: string, listener: (...args: unknown[]) => void): unknown
  off?(event: string, listener: (...args: unknown[]) => void): unknown
  readonly isOpen: boolean
  readonly isReady?: boolean
}

/**
 * The options of every call: node-redis's default reply types, whatever the
 * client maps them to; and no timer per command (node-redis 6 gives each a
 * 5 s `AbortSignal.timeout`, ~4 µs and garbage per command, for how long it
 * may wait to be written): while the client is connected a command is
 * written at once, and while it is not the link sets a timeout of its own.
 */
interface CallOptions {
  typeMapping: object
  timeout?: number
}

async function openNodeRedis(mod: LoadedModule, url: string, options: LibraryOptions | undefined, name: string): Promise<RedisLink> {
  const createClient = entryOf('redis', mod) as unknown as (options: object) => NodeRedisLike
  const socket = (options?.socket ?? {}) as { reconnectStrategy?: unknown }
  let connected = false
  const client = createClient({
    url,
    name,
    // Commands fail at once while disconnected, and the link sends them again within RESEND_WINDOW_MS.
    disableOfflineQueue: true,
    // The scripts' replies are the same in either protocol; node-redis reads RESP2 for less (bench/tools/redis-clients.ts).
    RESP: 2,
    ...options,
    // Until the first connection works, nothing retries (an unreachable Redis fails the open); after, reconnect as ioredis does.
    socket: { ...socket, reconnectStrategy: socket.reconnectStrategy ?? ((attempt: number) => (connected ? reconnectDelay(attempt + 1) : false)) },
  })
  client.on('error', () => {})
  try {
    await client.connect()
  } catch (err) {
    client.destroy()
    throw err
  }
  connected = true
  return new NodeRedisLink(client, false, 'owned')
}

/** Who opened a node-redis connection: zaris (`owned`, no offline queue), the user, or zaris as a watch reader. */
type NodeRedisUse = 'owned' | 'user' | 'reader'

class NodeRedisLink implements RedisLink {
  readonly library = 'redis'
  readonly cluster: boolean
  readonly #client: NodeRedisLike
  #options: CallOptions
  #connecting: Promise<unknown> | undefined
  readonly #alive: KeepAlive
  #detach: (() => void) | undefined
  /** Calls sent while the client was connected, by their reject: only for a user's client ({@link #watchOutages}). */
  readonly #sent = new Set<(err: Error) => void>()
  #tracking = false

  constructor(client: NodeRedisLike, cluster: boolean, use: NodeRedisUse, connecting?: Promise<unknown>) {
    this.#client = client
    this.cluster = cluster
    this.#connecting = connecting
    this.#alive = new KeepAlive(client, (on) => (on ? client.ref?.() : client.unref?.()))
    // A cluster's commands keep the client's timeouts: they wait for the slots' nodes, which the link does not watch.
    this.#options = cluster ? { typeMapping: {} } : { typeMapping: {}, timeout: 0 }
    if (!cluster && use === 'user') this.#watchOutages()
  }

  /**
   * A user's client queues commands while it reconnects (its offline queue):
   * one sent just before the connection dropped would wait there until Redis
   * is back, however long. So the calls sent while it was connected are
   * kept, and ended with an error once it is still reconnecting a resend
   * window after it lost its connection. (Not with an abort signal shared by
   * every call: a listener each, and Node warns of a leak past ten.)
   */
  #watchOutages(): void {
    let timer: ReturnType<typeof setTimeout> | undefined
    const reconnecting = () => {
      timer ??= setTimeout(() => {
        timer = undefined
        if (this.#client.isReady) return
        const ended = [...this.#sent]
        this.#sent.clear()
        for (const end of ended) end(Object.assign(new Error(`the connection to Redis stayed down for ${RESEND_WINDOW_MS} ms`), { name: 'OutageError' }))
      }, RESEND_WINDOW_MS)
    }
    const ready = () => {
      clearTimeout(timer)
      timer = undefined
    }
    this.#client.on('reconnecting', reconnecting)
    this.#client.on('ready', ready)
    this.#tracking = true
    this.#detach = () => {
      ready()
      this.#client.off?.('reconnecting', reconnecting)
      this.#client.off?.('ready', ready)
    }
  }

  /** `sending`, ended early by {@link #watchOutages} if the connection stays down. */
  #track(sending: Promise<unknown>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.#sent.add(reject)
      sending.then(
        (reply) => (this.#sent.delete(reject), resolve(reply)),
        (err: unknown) => (this.#sent.delete(reject), reject(err)),
      )
    })
  }

  async call(key: string | undefined, args: ReadonlyArray<string | number>): Promise<unknown> {
    if (this.#connecting) {
      try {
        await this.#connecting
      } finally {
        this.#connecting = undefined
      }
    }
    const strings = args.map(String)
    // Set when the connection is first found down: the end of the resend window.
    let deadline = 0
    for (let attempt = 1; ; attempt++) {
      let options = this.#options
      if (this.#client.isReady === false) {
        // A client with an offline queue keeps commands until it reconnects: not past the resend window.
        deadline ||= Date.now() + RESEND_WINDOW_MS
        options = { ...options, timeout: Math.max(1, deadline - Date.now()) }
      }
      try {
        const sending = this.cluster ? this.#client.sendCommand(key, false, strings, options) : this.#client.sendCommand(strings, options)
        return await (this.#tracking && options === this.#options ? this.#track(sending) : sending)
      } catch (err) {
        // LOADING: Redis is back but still reading its data, and ran nothing. ioredis waits for that, however long,
        // before it sends (its ready check); node-redis does not, so the link sends again until Redis has loaded.
        const loading = isErrorReply(err) && /^LOADING\b/.test(err.message)
        if (isErrorReply(err) && !loading) throw replyError(err)
        // A client that is closed (by its owner, or given up) stays closed; a window that ran out has run out.
        if (!this.#client.isOpen || (err as Error).name === 'OutageError') throw err
        const now = Date.now()
        deadline = loading ? 0 : deadline || now + RESEND_WINDOW_MS
        if (deadline && now >= deadline) throw err
        await new Promise((resolve) => setTimeout(resolve, loading ? LOADING_POLL_MS : Math.min(reconnectDelay(attempt), deadline - now)))
      }
    }
  }

  evalScript(script: LuaScript, numberOfKeys: number, keysAndArgs: ReadonlyArray<string | number>): Promise<unknown> {
    return evalScript(this, script, numberOfKeys, keysAndArgs)
  }

  async xread(key: string, afterId: string, count: number, blockMs: number): Promise<Array<[string, string[]]> | null> {
    return streamEntries(await this.call(key, ['XREAD', 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', key, afterId]))
  }

  duplicate(): RedisLink {
    // Its own connection(s), with this one's settings; a cluster's duplicate finds the nodes again.
    const reader = this.#client.duplicate()
    reader.on('error', () => {})
    return new NodeRedisLink(reader, this.cluster, 'reader', reader.connect())
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    // node-redis subscribes again after a reconnect by itself.
    await this.#connecting
    await this.#client.subscribe(channel, onMessage)
  }

  onBreak(fn: () => void): void {
    onBreak(this.#client, fn)
  }

  keepAlive(on: boolean): void {
    // node-redis carries the setting over to later sockets, but not to one it is opening when the setting changes.
    this.#alive.set(on)
  }

  async close(): Promise<void> {
    try {
      await this.#client.close()
    } catch {
      this.#client.destroy()
    }
  }

  detach(): void {
    this.#detach?.()
  }

  destroy(): void {
    this.#connecting?.catch(() => {})
    try {
      this.#client.destroy()
    } catch {
      // Already closed.
    }
  }
}

// ---------------------------------------------------------------------------
// the same for every library

/** An error reply of Redis as node-redis raises it (`ErrorReply` and its subclasses). */
function isErrorReply(err: unknown): err is Error {
  for (let p = err instanceof Error ? Object.getPrototypeOf(err) : null; p && p !== Error.prototype; p = Object.getPrototypeOf(p)) {
    if ((p as { constructor?: { name?: string } }).constructor?.name === 'ErrorReply') return true
  }
  return false
}

/** node-redis's error reply under ioredis's name, so one check reads both. */
function replyError(err: Error): Error {
  const out = new Error(err.message, { cause: err })
  out.name = 'ReplyError'
  return out
}
