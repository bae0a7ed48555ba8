/**
 * The `zaris` command:
 *
 * ```
 * zaris serve [--port 7861] [--host 127.0.0.1] [--data FILE | --redis URL]
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
import { isZarisError } from '../core/errors'
import { memoryBackend, redisBackend, sqliteBackend, type Backend } from './backends'
import { createHandler } from './handler'
import { loopbackHosts } from './options'
import { listen } from './node'

const USAGE = `usage: zaris serve [options]

  --port N          port to listen on (default 7861; 0 picks a free one)
  --host ADDR       address to bind (default 127.0.0.1)
  --data FILE       keep entries in this SQLite file (default: memory)
  --redis URL       keep entries in this Redis, shared with other nodes (redis://host:6379/0)
  --token SECRET    require "Authorization: Bearer SECRET" (or set ZARIS_TOKEN)
  --cors ORIGIN...  let these browser origins call the node (exact origins, never *)
  --insecure        allow binding a non-loopback address without a token
  --max-watchers N  open watch streams allowed (default 1000)
  --max-namespaces N  namespaces the node opens at most (default 10000)
  --max-body BYTES  largest request body (default 65536)
`

/** Parsed `serve` options. */
export interface ServeArgs {
  port: number
  host: string
  data?: string
  redis?: string
  token?: string
  cors: string[]
  insecure: boolean
  maxWatchers?: number
  maxNamespaces?: number
  maxBody?: number
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
  const args: ServeArgs = { port: 7861, host: '127.0.0.1', cors: [], insecure: false }
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
        args.maxBody = integer(1024, 64 * 1024 * 1024)
        break
      default:
        throw new UsageError(`unknown option ${JSON.stringify(arg)}`)
    }
  }
  if (args.data !== undefined && args.redis !== undefined) throw new UsageError('--data and --redis are two different stores; give one')
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
  const backend: Backend =
    args.redis !== undefined ? await redisBackend(args.redis) : args.data !== undefined ? await sqliteBackend(args.data) : memoryBackend()
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
  })
  let node
  try {
    node = await listen(handler, { port: args.port, host: args.host })
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
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    console.log(USAGE)
    return command === undefined ? 2 : 0
  }
  if (command !== 'serve') {
    console.error(`zaris: unknown command ${JSON.stringify(command)}\n\n${USAGE}`)
    return 2
  }
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

// Run when executed directly (node dist/cli.js, tsx src/server/cli.ts, the zaris bin), not when
// imported. Matched on the path, since import.meta is not there in the CommonJS build.
const entry = process.argv[1]
if (entry !== undefined && /[\\/](cli\.(c?js|mjs|ts)|zaris)$/.test(entry)) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code
  })
}
