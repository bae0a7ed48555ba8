/**
 * The commands of `zaris` but `serve`: parse, check, connect to `--url`,
 * run one verb, close. Resolves the exit code: 0 done, 1 not found or
 * refused (errors of the store included), 2 usage mistake; the verbs that
 * run a command under a hold exit with the command's code, 75 when the hold
 * could not be had, 70 when it was lost while the command ran.
 *
 * @module
 */
import { hostname } from 'node:os'
import { connect } from '../connect'
import type { Client } from '../core/client'
import { randomHex } from '../core/contract/ids'
import { isZarisError } from '../core/contract/errors'
import { parseCommandLine, RUN_VERBS, UsageError, type Parsed, type VerbOption } from './args'
import { VERBS } from './commands'
import type { Io, Run } from './run'
import { commandHelp, COMMANDS, mainHelp } from './help'
import { isOnce, runOnceCommand } from './once'

export { mainHelp } from './help'
export type { Io } from './run'

/** The verbs this module runs. */
export const INSPECT_VERBS = new Set(Object.keys(COMMANDS))

/** Prints to the process's stdout and stderr, a line each. */
export const processIo: Io = {
  out: (text) => void process.stdout.write(`${text}\n`),
  err: (text) => void process.stderr.write(`${text}\n`),
}

/**
 * Runs `zaris VERB ...` for an inspect verb (or `zaris --help`); resolves the exit code.
 *
 * @example
 * process.exitCode = await runInspect(['get', 'report:status', '--json'], process.env)
 */
export async function runInspect(argv: string[], env: Record<string, string | undefined>, io: Io = processIo): Promise<number> {
  if (isOnce(argv)) return runOnceCommand(argv, env, io)
  let parsed: Parsed
  let run: Run
  try {
    parsed = parseCommandLine(argv, env)
    if (parsed.verb === undefined || !INSPECT_VERBS.has(parsed.verb)) {
      if (parsed.verb === 'serve') throw new UsageError('serve comes first, its options after it: zaris serve --port 7861 ...')
      if (parsed.verb !== undefined) throw new UsageError(`unknown command ${JSON.stringify(parsed.verb)}`)
      if (parsed.help) io.out(mainHelp())
      else io.err(mainHelp())
      return parsed.help ? 0 : 2
    }
    if (parsed.help) {
      io.out(commandHelp(parsed.verb))
      return 0
    }
    run = prepare(parsed)
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    const verb = argv.find((a) => INSPECT_VERBS.has(a))
    io.err(`zaris: ${err.message}\n${verb === undefined ? 'See zaris --help.' : `usage: zaris ${COMMANDS[verb]!.synopsis}  (zaris ${verb} --help for more)`}`)
    return 2
  }
  let client: Client | undefined
  try {
    // A command run under a hold is shown as host:pid in `zaris locks` (and a few random characters: ids must not repeat).
    const id = RUN_VERBS.has(parsed.verb) ? `${hostname()}:${process.pid}:${randomHex(2)}` : undefined
    client = await connect(parsed.url, { ...(parsed.token === undefined ? {} : { token: parsed.token }), ...(id === undefined ? {} : { id }) })
    return await run(client, io)
  } catch (err) {
    // A connection string that does not parse is a usage mistake; anything the store says is a refusal.
    if (isZarisError(err, 'INVALID_URL')) {
      io.err(`zaris: ${err.message}`)
      return 2
    }
    io.err(`zaris: ${isZarisError(err) ? `${err.message} (${err.code})` : ((err as Error).message ?? String(err))}`)
    return 1
  } finally {
    await client?.close().catch(() => {})
  }
}

/** Checks the verb's arguments and options; resolves what to run. */
function prepare(p: Parsed): Run {
  const verb = p.verb!
  const spec = VERBS[verb]!
  for (const name of Object.keys(p.options) as VerbOption[]) {
    if (!spec.options.includes(name)) throw new UsageError(`--${name} is not an option of ${verb}`)
  }
  const [min, max] = spec.args
  if (p.args.length < min) throw new UsageError(`${verb} needs ${RUN_VERBS.has(verb) ? 'a NAME' : min === 1 ? 'a KEY' : 'KEY and VALUE'}: zaris ${COMMANDS[verb]!.synopsis}`)
  if (p.command !== undefined && !RUN_VERBS.has(verb)) throw new UsageError(`${verb} runs no command: nothing may follow --`)
  if (p.args.length > max) throw new UsageError(`${verb} takes at most ${max} argument${max === 1 ? '' : 's'}, got ${p.args.length}: ${p.args.map((a) => JSON.stringify(a)).join(' ')}`)
  return spec.prepare(p)
}
