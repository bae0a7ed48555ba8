/**
 * What the Redis adapter needs of a connection, whatever client library
 * carries it (`client.ts` makes one for each): commands, scripts, a blocking
 * read, a second connection for it, and its lifetime. And what is done the
 * same way over every library: running a script by `EVALSHA`, keeping a
 * socket's hold on Node across reconnects.
 *
 * @module
 */

/** A Lua script for `EVALSHA`: its text, and its SHA-1 once known. */
export interface LuaScript {
  readonly lua: string
  sha?: string
}

/** One connection (or cluster) as the adapter uses it, whatever library is underneath. */
export interface RedisLink {
  /** `ioredis` for ioredis and iovalkey (one API), `redis` for node-redis. */
  readonly library: 'ioredis' | 'redis'
  readonly cluster: boolean
  /** Sends one command; on a cluster it goes to the node that serves `key`. */
  call(key: string | undefined, args: ReadonlyArray<string | number>): Promise<unknown>
  /** Runs `script` by `EVALSHA` (by `EVAL` if Redis does not hold it); `keysAndArgs[0]` routes it. */
  evalScript(script: LuaScript, numberOfKeys: number, keysAndArgs: ReadonlyArray<string | number>): Promise<unknown>
  /** `XREAD COUNT count BLOCK blockMs STREAMS key afterId`: the entries of `key`, or null when none came. */
  xread(key: string, afterId: string, count: number, blockMs: number): Promise<Array<[string, string[]]> | null>
  /** A connection of its own for blocking reads, with this one's settings; it waits through outages. Closed by `destroy()`. */
  duplicate(): RedisLink
  /**
   * Subscribes this connection (a {@link duplicate}: a subscribed connection
   * runs no other commands) to `channel`, again after each reconnect; each
   * message published on it goes to `onMessage`. Resolves once subscribed.
   */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<void>
  /** Calls `fn` once each time the connection drops, before the library reconnects it (for telemetry). */
  onBreak(fn: () => void): void
  /** Whether the socket keeps Node running (for connections zaris opened; kept across reconnects). */
  keepAlive(on: boolean): void
  /** Closes it after its pending commands (QUIT), or at once if that fails. */
  close(): Promise<void>
  destroy(): void
  /** The adapter is done with a client it did not open: takes back what it attached to it. */
  detach(): void
}

/** How long a command cut off by a dropped connection is sent again (ioredis: `maxRetriesPerRequest` 10, ~3 s). */
export const RESEND_WINDOW_MS = 3_000

/** Runs `script` on `link` by `EVALSHA`, and by `EVAL` when Redis does not hold it (`NOSCRIPT`); `keysAndArgs[0]` routes it on a cluster. */
export async function evalScript(link: RedisLink, script: LuaScript, numberOfKeys: number, keysAndArgs: ReadonlyArray<string | number>): Promise<unknown> {
  const key = keysAndArgs[0] === undefined ? undefined : String(keysAndArgs[0])
  script.sha ??= await sha1(script.lua)
  try {
    return await link.call(key, ['EVALSHA', script.sha, numberOfKeys, ...keysAndArgs])
  } catch (err) {
    if (!(err instanceof Error && err.name === 'ReplyError' && /^NOSCRIPT/.test(err.message))) throw err
    // Not in this Redis's script cache (a new server, a restart, SCRIPT FLUSH): EVAL runs it and caches it.
    return link.call(key, ['EVAL', script.lua, numberOfKeys, ...keysAndArgs])
  }
}

/** The SHA-1 of a script's text, as `EVALSHA` names it (Web Crypto: no Node built-in to import). */
async function sha1(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-1', new TextEncoder().encode(text)))
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')
}

/** Whether a connection's sockets keep Node running: set once, applied again to each socket its client opens. */
export class KeepAlive {
  #on: boolean | undefined
  readonly #client: { on(event: string, listener: () => void): unknown }
  readonly #apply: (on: boolean) => void

  constructor(client: { on(event: string, listener: () => void): unknown }, apply: (on: boolean) => void) {
    this.#client = client
    this.#apply = apply
  }

  set(on: boolean): void {
    if (this.#on === undefined) {
      const again = () => this.#apply(this.#on!)
      this.#client.on('connect', again)
      this.#client.on('ready', again)
    }
    this.#on = on
    this.#apply(on)
  }
}

/**
 * An `XREAD` reply of one stream: RESP2's `[[key, entries]]`, or a RESP3 map
 * as node-redis gives it (an object, or a `Map`) or as ioredis 6's `call`
 * does (flat: `[key, entries]`).
 */
export function streamEntries(reply: unknown): Array<[string, string[]]> | null {
  if (reply === null || reply === undefined) return null
  if (Array.isArray(reply)) {
    const pair = (typeof reply[0] === 'string' ? reply : reply[0]) as [string, Array<[string, string[]]>] | undefined
    return pair?.[1] ?? null
  }
  const values = reply instanceof Map ? [...reply.values()] : Object.values(reply as object)
  return (values[0] as Array<[string, string[]]> | undefined) ?? null
}

/** Calls `fn` on `client`'s first `reconnecting` after each `ready` (ioredis and node-redis emit both): once per break. */
export function onBreak(client: { on(event: string, listener: (...args: unknown[]) => void): unknown }, fn: () => void): void {
  let up = true
  client.on('ready', () => (up = true))
  client.on('reconnecting', () => {
    if (up) fn()
    up = false
  })
}
