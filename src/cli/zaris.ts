/**
 * The `zaris` command: `serve` starts a node (here); every other command
 * inspects a store (src/cli: get, put, del, ls, watch, locks, release,
 * counter). `zaris --help` lists them.
 *
 * ```
 * zaris serve [--port 7861] [--host 127.0.0.1] [--data FILE | --redis URL | --etcd URL | --postgres URL]
 *             [--token SECRET] [--cors ORIGIN...] [--insecure]
 * ```
 *
 * Prints one line when it listens (address and store), stops cleanly on
 * SIGINT and SIGTERM. The token may also come from the ZARIS_TOKEN
 * environment variable, which keeps it out of the process list.
 *
 * @module
 */
import { isIP } from 'node:net'
import { runInspect } from './index'
import { isZarisError } from '../core/contract/errors'
import { etcdBackend, memoryBackend, postgresBackend, redisBackend, sqliteBackend, type Backend, type StoreLimits } from '../server/backends'
import { createHandler } from '../server/handler'
import { memoryShares } from '../server/limits'
import { loopbackHosts } from '../server/options'
import { listen } from '../server/node'

const USAGE = `usage: zaris serve [options]

  --port N          port to listen on (default 7861; 0 picks a free one)
  --host ADDR       address to bind (default 127.0.0.1)
  --data FILE       keep entries in this SQLite file (default: memory)
  --redis URL       keep entries in this Redis, shared with other nodes (redis://host:6379/0)
  --etcd URL        keep entries in this etcd cluster, shared with other nodes (etcd://host:2379,host2:2379)
  --postgres URL    keep entries in this Postgres database, shared with other nodes (postgres://user@host:5432/db)
  --token SECRET    require "Authorization: Bearer SECRET" (or set ZARIS_TOKEN)
  --cors ORIGIN...  let these browser origins call the node (exact origins, never *)
  --insecure        allow binding a non-loopback address without a token
  --max-watchers N  open watch streams allowed (default 1000)
  --max-namespaces N  namespaces the node opens at most (default 10000)
  --max-body BYTES  largest request body (default 64KiB)

  Limits under load (docs/operations.md; BYTES may end in KiB, MiB or GiB):
  --max-memory BYTES          the node's budget for what it holds for clients
                              (default 256MiB); the five below default to shares of it
  --max-store-bytes BYTES     entries of the memory/SQLite stores (1/4)
  --max-history-bytes BYTES   watch history, all namespaces (1/8; 8MiB per namespace)
  --max-output-bytes BYTES    unread answers, all connections (1/4)
  --max-input-bytes BYTES     requests being read or in flight (1/4)
  --output-limit HARD,SOFT,S  per connection: cut past HARD, or past SOFT for S seconds (4MiB,1MiB,10)
  --send-timeout S            cut a connection whose unread output does not move for S seconds (30)
  --max-connections N         open connections (2048)
  --idle-timeout S            close a framed connection idle this long (60)
  --headers-timeout S         to send the request headers (10)
  --request-timeout S         to send the whole request (30)
  --max-page-bytes BYTES      one list or events answer (1MiB)
  --max-parked N              commits waiting for a change, on the node (4096)
  --max-parked-per-connection N   the same, per connection (64)
`

/** Parsed `serve` options. */
export interface ServeArgs {
  port: number
  host: string
  data?: string
  redis?: string
  etcd?: string
  postgres?: string
  token?: string
  cors: string[]
  insecure: boolean
  maxWatchers?: number
  maxNamespaces?: number
  maxBody?: number
  /** The limits under load (flags of the second block of the usage). */
  limits: LoadLimits
}

/** The `zaris serve` flags that bound a node under load (see limits.ts and docs/operations.md). */
export interface LoadLimits {
  maxMemory?: number
  maxStoreBytes?: number
  maxHistoryBytes?: number
  maxOutputBytes?: number
  maxInputBytes?: number
  output?: { hard: number; soft: number; softMs: number }
  sendTimeoutMs?: number
  maxConnections?: number
  idleTimeoutMs?: number
  headersTimeoutMs?: number
  requestTimeoutMs?: number
  maxPageBytes?: number
  /** Commits waiting for a change (waitChange), on the node and per connection. */
  maxParked?: number
  maxParkedPerConnection?: number
}

/** A command-line mistake: printed with the usage, exit code 2. */
export class UsageError extends Error {}

/**
 * Parses the arguments after `serve`.
 *
 * @example
 * parseServeArgs(['--port', '0', '--cors', 'http://localhost:5173'], {})
 */
export function parseServeArgs(argv: string[], env: Record<string, string | undefined>): ServeArgs {
  const args: ServeArgs = { port: 7861, host: '127.0.0.1', cors: [], insecure: false, limits: {} }
  const token = env.ZARIS_TOKEN
  if (token) args.token = token
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined]
    const value = () => {
      if (inline !== undefined) return inline
      const v = argv[++i]
      if (v === undefined || v.startsWith('--')) throw new UsageError(`${flag} needs a value`)
      return v
    }
    const integer = (min: number, max: number) => {
      const raw = value()
      const n = Number(raw)
      if (!/^\d+$/.test(raw) || n < min || n > max) throw new UsageError(`${flag} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`)
      return n
    }
    switch (flag) {
      case '--port':
        args.port = integer(0, 65535)
        break
      case '--host':
        args.host = value()
        break
      case '--data':
        args.data = value()
        break
      case '--redis':
        args.redis = value()
        break
      case '--etcd':
        args.etcd = value()
        break
      case '--postgres':
        args.postgres = value()
        break
      case '--token':
        args.token = value()
        break
      case '--cors':
        if (inline !== undefined) args.cors.push(...inline.split(','))
        else {
          if (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--')) throw new UsageError('--cors needs at least one origin')
          while (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('--')) args.cors.push(...argv[++i]!.split(','))
        }
        break
      case '--insecure':
        args.insecure = true
        break
      case '--max-watchers':
        args.maxWatchers = integer(1, 1_000_000)
        break
      case '--max-namespaces':
        args.maxNamespaces = integer(1, 10_000_000)
        break
      case '--max-body':
        args.maxBody = byteSize(flag, value(), 1024, 64 * MIB)
        break
      default:
        if (!loadLimit(args.limits, flag, value, integer)) throw new UsageError(`unknown option ${JSON.stringify(arg)}`)
    }
  }
  if ([args.data, args.redis, args.etcd, args.postgres].filter((x) => x !== undefined).length > 1) {
    throw new UsageError('--data, --redis, --etcd and --postgres are different stores; give one')
  }
  args.cors = args.cors.map((o) => o.trim()).filter((o) => o !== '')
  if (args.cors.includes('*')) throw new UsageError('--cors takes exact origins; * is not allowed')
  if (args.token !== undefined && (args.token.length < 8 || /\s/.test(args.token))) {
    throw new UsageError('the token must be at least 8 characters without whitespace')
  }
  if (!isLoopback(args.host) && args.token === undefined && !args.insecure) {
    throw new UsageError(
      `refusing to listen on ${args.host} without --token: anyone who can reach it could take every lock. Pass --token (or ZARIS_TOKEN), or --insecure if you mean it`,
    )
  }
  return args
}

const MIB = 1024 * 1024
const UNITS: Record<string, number> = { '': 1, b: 1, kib: 1024, k: 1024, mib: MIB, m: MIB, gib: 1024 * MIB, g: 1024 * MIB }

/** A size like 256MiB, 64KiB, 1GiB or 1048576 (binary units; k, m, g taken the same), from `min` to `max` bytes. */
function byteSize(flag: string, raw: string, min: number, max: number): number {
  const m = /^(\d+)\s*([a-z]*)$/i.exec(raw.trim())
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined
  const n = m && unit !== undefined ? Number(m[1]) * unit : NaN
  if (!(n >= min && n <= max)) throw new UsageError(`${flag} must be a size from ${min} bytes to ${max / MIB} MiB (like 64MiB), got ${JSON.stringify(raw)}`)
  return n
}

/**
 * The limits block's flags that take one number: the field each sets and how
 * it is read — a size (binary units) from its least value, whole seconds up
 * to a most, or a count from a least value.
 */
const LIMIT_FLAGS: Record<string, [Exclude<keyof LoadLimits, 'output'>, 'size' | 'seconds' | 'count', number]> = {
  '--max-memory': ['maxMemory', 'size', 16 * MIB],
  '--max-store-bytes': ['maxStoreBytes', 'size', 64 * 1024],
  '--max-history-bytes': ['maxHistoryBytes', 'size', 64 * 1024],
  '--max-output-bytes': ['maxOutputBytes', 'size', 64 * 1024],
  '--max-input-bytes': ['maxInputBytes', 'size', 64 * 1024],
  '--max-page-bytes': ['maxPageBytes', 'size', 64 * 1024],
  '--send-timeout': ['sendTimeoutMs', 'seconds', 3_600],
  '--idle-timeout': ['idleTimeoutMs', 'seconds', 86_400],
  '--headers-timeout': ['headersTimeoutMs', 'seconds', 600],
  '--request-timeout': ['requestTimeoutMs', 'seconds', 3_600],
  '--max-connections': ['maxConnections', 'count', 16],
  '--max-parked': ['maxParked', 'count', 1],
  '--max-parked-per-connection': ['maxParkedPerConnection', 'count', 1],
}

/** Parses one flag of the limits block into `limits`; false if `flag` is not one of them. */
function loadLimit(limits: LoadLimits, flag: string, value: () => string, integer: (min: number, max: number) => number): boolean {
  if (flag === '--output-limit') {
    const parts = value().split(',')
    if (parts.length !== 3) throw new UsageError('--output-limit takes HARD,SOFT,SECONDS, like 4MiB,1MiB,10')
    const [hard, soft] = parts.slice(0, 2).map((p) => byteSize(flag, p, 16 * 1024, 1024 * MIB))
    const s = Number(parts[2])
    if (!Number.isInteger(s) || s < 1 || s > 3_600) throw new UsageError(`--output-limit: SECONDS must be an integer from 1 to 3600, got ${JSON.stringify(parts[2])}`)
    if (soft! > hard!) throw new UsageError('--output-limit: SOFT must not be larger than HARD')
    limits.output = { hard: hard!, soft: soft!, softMs: s * 1000 }
    return true
  }
  const known = Object.hasOwn(LIMIT_FLAGS, flag) ? LIMIT_FLAGS[flag] : undefined
  if (known === undefined) return false
  const [field, kind, bound] = known
  if (kind === 'size') limits[field] = byteSize(flag, value(), bound, 1024 * 1024 * MIB)
  else if (kind === 'seconds') limits[field] = integer(1, bound) * 1000
  else limits[field] = integer(bound, 1_000_000)
  return true
}

/** True for addresses only this machine can reach. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (h === 'localhost' || h === '::1') return true
  return isIP(h) === 4 && h.startsWith('127.')
}

/**
 * Starts a node and resolves when it has stopped (on SIGINT/SIGTERM).
 *
 * @example
 * await serveCommand(parseServeArgs(['--port', '7861'], process.env))
 */
export async function serveCommand(args: ServeArgs, log: (line: string) => void = console.log): Promise<void> {
  const l = args.limits
  const shares = memoryShares(l.maxMemory)
  const stores: StoreLimits = { maxStoreBytes: l.maxStoreBytes ?? shares.maxStoreBytes, maxHistoryBytes: l.maxHistoryBytes ?? shares.maxHistoryBytes }
  stores.historyBytes = Math.min(shares.historyBytesPerNamespace, stores.maxHistoryBytes!)
  const backend: Backend =
    args.redis !== undefined
      ? await redisBackend(args.redis)
      : args.etcd !== undefined
        ? await etcdBackend(args.etcd)
        : args.postgres !== undefined
          ? await postgresBackend(args.postgres)
          : args.data !== undefined
          ? await sqliteBackend(args.data, stores)
          : memoryBackend(stores)
  const handler = createHandler({
    adapterFor: backend.adapterFor,
    positionOf: backend.positionOf,
    token: args.token,
    cors: args.cors,
    // Loopback without a token: accept only loopback Host names, so a web page cannot reach the node by DNS rebinding.
    hosts: isLoopback(args.host) && args.token === undefined ? [...loopbackHosts] : undefined,
    maxWatchers: args.maxWatchers,
    maxNamespaces: args.maxNamespaces,
    maxBodyBytes: args.maxBody,
    maxPageBytes: l.maxPageBytes,
    replay: { maxBytes: shares.replayCacheBytes },
    // Parked commits hold their requests: a small share of the budget, as the replay cache's.
    park: { maxParked: l.maxParked, maxPerConnection: l.maxParkedPerConnection, maxParkedBytes: Math.floor(shares.replayCacheBytes / 2) },
  })
  handler.metrics.gauge('memory_budget_bytes', 'The memory budget of the node (--max-memory): what it may hold for clients, beyond the runtime.', () => shares.maxMemory)
  if (backend.usage) {
    const usage = backend.usage.bind(backend)
    handler.metrics.gauge('store_bytes', 'Bytes of the entries of the stores (--max-store-bytes).', () => usage().storeBytes)
    handler.metrics.gauge('history_bytes', 'Bytes of watch history kept (--max-history-bytes).', () => usage().historyBytes)
  }
  let node
  try {
    node = await listen(handler, {
      port: args.port,
      host: args.host,
      maxOutputBytes: l.maxOutputBytes ?? shares.maxOutputBytes,
      maxInputBytes: l.maxInputBytes ?? shares.maxInputBytes,
      outputHardBytes: l.output?.hard,
      outputSoftBytes: l.output?.soft,
      outputSoftMs: l.output?.softMs,
      sendTimeoutMs: l.sendTimeoutMs,
      maxConnections: l.maxConnections,
      framesIdleMs: l.idleTimeoutMs,
      headersTimeoutMs: l.headersTimeoutMs,
      requestTimeoutMs: l.requestTimeoutMs,
    })
  } catch (err) {
    await handler.close()
    await backend.close()
    throw err
  }
  const auth = args.token === undefined ? 'no token' : 'bearer token'
  const cors = args.cors.length === 0 ? 'cors off' : `cors ${args.cors.join(' ')}`
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      process.off('SIGINT', onInt)
      process.off('SIGTERM', onTerm)
      log(`zaris node stopping (${signal})`)
      resolve()
    }
    const onInt = () => stop('SIGINT')
    const onTerm = () => stop('SIGTERM')
    process.on('SIGINT', onInt)
    process.on('SIGTERM', onTerm)
    // Only now: whoever waits for this line may signal at once, and must not meet the default action (exit).
    log(`zaris node listening on ${node.url} (store: ${backend.description}; ${auth}; ${cors})`)
  })
  await node.close()
  await backend.close()
}

/**
 * Runs the command line; resolves the exit code.
 *
 * @example
 * process.exitCode = await main(process.argv.slice(2))
 */
export async function main(argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  const [command, ...rest] = argv
  // Every command but serve inspects a store (src/cli), and so do `zaris` and `zaris --help`.
  if (command !== 'serve') return runInspect(argv, env)
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(USAGE)
    return 0
  }
  try {
    await serveCommand(parseServeArgs(rest, env))
    return 0
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`zaris: ${err.message}\n\n${USAGE}`)
      return 2
    }
    const code = (err as { code?: unknown }).code
    if (code === 'EADDRINUSE') console.error(`zaris: the address is in use: ${(err as Error).message}`)
    else if (isZarisError(err)) console.error(`zaris: ${err.message}`)
    else console.error(`zaris: ${(err as Error).message ?? String(err)}`)
    return 1
  }
}

// Run when executed directly (node dist/cli.js, tsx src/cli/zaris.ts, the zaris bin), not when
// imported. Matched on the path, since import.meta is not there in the CommonJS build.
const entry = process.argv[1]
if (entry !== undefined && /[\\/](cli\.(c?js|mjs)|zaris(\.(ts|mjs))?)$/.test(entry)) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code
  })
}
