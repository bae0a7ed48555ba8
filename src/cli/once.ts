/**
 * `zaris once NAME SLOT [options] -- cmd args...`: runs the command for slot
 * SLOT of job NAME unless an instance on the same store already ran it (or
 * runs it), through `client.jobs.once` — the crontab line every host can
 * carry: `zaris once report "$(date +%F)" -- ./report.sh`.
 *
 * The command runs under the slot's lock (renewed meanwhile) with
 * `ZARIS_LOCK_KEY` (`NAME@SLOT`), `ZARIS_LOCK_TOKEN` and `ZARIS_URL`, so
 * that `zaris put --fence-token`-style writes can be fenced by it; it is
 * stopped (SIGTERM, then SIGKILL after `--grace`) if the lock is lost.
 *
 * Exit codes:
 * - the command's own: 0 records the slot done; any other records it
 *   failed (a later call may retry it, `--retries` times);
 * - 0 when the slot is skipped (done, running elsewhere, or failed with
 *   no retry left): the fleet's job is done or under way; a line on stderr
 *   (with `--json`, the result on stdout) says which and by whom;
 * - 70 when the lock was lost before the command ended (it was stopped),
 *   126/127 when the command cannot be started, 1 when the store refuses
 *   or cannot be reached, 2 for a usage mistake.
 *
 * @module
 */
import { hostname } from 'node:os'
import { parseArgs } from 'node:util'
import { connect } from '../connect'
import type { Client } from '../core/client'
import { isZarisError } from '../core/contract/errors'
import { MAX_TTL } from '../core/contract/limits'
import type { JobResult } from '../core/jobs'
import { DEFAULT_URL, integerArg, keyArg, UsageError } from './args'
import { showKey } from './format'
import { EXIT_LOST, runUnder } from './child'
import type { Io } from './run'

const OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  id: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  ttl: { type: 'string' },
  retention: { type: 'string' },
  retries: { type: 'string' },
  wait: { type: 'string' },
  grace: { type: 'string' },
} as const

/** Ms between SIGTERM and SIGKILL when the lock is lost, unless `--grace` says. */
const DEFAULT_GRACE_MS = 5_000

export const ONCE_SYNOPSIS = 'once NAME SLOT [--ttl MS] [--retention MS] [--retries N] [--wait MS] [--grace MS] [--id ID] -- cmd args...'

export const ONCE_HELP = `usage: zaris ${ONCE_SYNOPSIS} [--url URL] [--token SECRET] [--json]

Run a command once for slot SLOT of job NAME, however many hosts run this line:
the first runs the command under the slot's lock, the others skip it, and a
host whose clock is late finds the slot done and skips too. SLOT names the
tick (its scheduled time, a date: "$(date +%F)"), not the time it fired.

  --ttl MS        the lock's TTL, renewed while the command runs (default 30000):
                  how soon a host that died mid-run is retried
  --retention MS  how long the slot's record is kept (default 86400000, a day)
  --retries N     how many times a failed run (non-zero exit, dead host) may run
                  again by a later call (default 1)
  --wait MS       wait this long for a run under way elsewhere, to run its retry
                  if it fails (default 0: skip at once)
  --grace MS      after SIGTERM to a command whose lock was lost, SIGKILL (default 5000)
  --id ID         this host's name in the slot's record (default hostname-pid)

The command gets ZARIS_LOCK_KEY (NAME@SLOT), ZARIS_LOCK_TOKEN and ZARIS_URL.
Exit codes: the command's (0 records the slot done, else failed); 0 when the
slot is skipped (done, running or spent: a line on stderr says by whom); 70
when the lock was lost and the command stopped; 126/127 when it cannot start;
1 when the store refuses or is unreachable; 2 for a usage mistake.`

interface OnceArgs {
  name: string
  slot: string
  command: string[]
  url: string
  token: string | undefined
  id: string
  json: boolean
  help: boolean
  options: { ttl?: number; retention?: number; retries?: number; wait?: number }
  graceMs: number
}

/** Splits `argv` at the first `--` (the command). */
function split(argv: string[]): { head: string[]; command: string[] | undefined } {
  const at = argv.indexOf('--')
  return at === -1 ? { head: argv, command: undefined } : { head: argv.slice(0, at), command: argv.slice(at + 1) }
}

/** Whether `argv` (after `zaris`) is a `once` command. */
export function isOnce(argv: string[]): boolean {
  const { positionals } = parseArgs({ args: split(argv).head, options: OPTIONS, allowPositionals: true, strict: false })
  return positionals[0] === 'once'
}

function parseOnce(argv: string[], env: Record<string, string | undefined>): OnceArgs {
  const { head, command } = split(argv)
  let parsed
  try {
    parsed = parseArgs({ args: head, options: OPTIONS, allowPositionals: true, strict: true })
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
  const v = parsed.values
  const [, name, slot, ...extra] = parsed.positionals
  const base = { url: v.url ?? env.ZARIS_URL ?? DEFAULT_URL, token: v.token ?? (env.ZARIS_TOKEN || undefined), json: v.json ?? false, help: v.help ?? false }
  if (base.help) return { ...base, name: '', slot: '', command: [], id: '', options: {}, graceMs: 0 }
  if (name === undefined || slot === undefined) throw new UsageError('once needs NAME and SLOT')
  if (extra.length > 0) throw new UsageError(`once takes NAME and SLOT, then -- and the command; got ${extra.map((a) => JSON.stringify(a)).join(' ')} too`)
  if (keyArg(name, 'NAME').includes('@')) throw new UsageError('NAME must not contain "@": it ends the job\'s name in the slot\'s lock key (NAME@SLOT)')
  if (slot === '') throw new UsageError('SLOT must not be empty')
  if (!command?.length || command[0] === '') throw new UsageError(`once runs a command: put it after --, as in zaris once ${name} ${slot} -- ./job.sh`)
  const ms = (raw: string | undefined, flag: string, min: number) => (raw === undefined ? undefined : integerArg(raw, flag, { min, max: MAX_TTL }))
  const options = { ttl: ms(v.ttl, '--ttl', 1), retention: ms(v.retention, '--retention', 1), retries: v.retries === undefined ? undefined : integerArg(v.retries, '--retries', { min: 0, max: 100 }), wait: ms(v.wait, '--wait', 0) }
  return { ...base, name, slot, command, id: v.id ?? `${hostname()}-${process.pid}`, options, graceMs: ms(v.grace, '--grace', 0) ?? DEFAULT_GRACE_MS }
}

/** A command's non-zero exit, as the error `fn` throws: the record says failed. */
class CommandFailed extends Error {
  constructor(readonly code: number) {
    super(`the command exited with ${code}`)
  }
}

/**
 * Runs `zaris once ...`; resolves the exit code.
 *
 * @example
 * process.exitCode = await runOnceCommand(['once', 'report', '2024-06-01', '--', './report.sh'], process.env, io)
 */
export async function runOnceCommand(argv: string[], env: Record<string, string | undefined>, io: Io): Promise<number> {
  let a: OnceArgs
  try {
    a = parseOnce(argv, env)
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    io.err(`zaris: ${err.message}\nusage: zaris ${ONCE_SYNOPSIS}  (zaris once --help for more)`)
    return 2
  }
  if (a.help) {
    io.out(ONCE_HELP)
    return 0
  }
  let client: Client | undefined
  try {
    client = await connect(a.url, { id: a.id, ...(a.token === undefined ? {} : { token: a.token }) })
    return report(a, io, await run(client, a, io))
  } catch (err) {
    const usage = isZarisError(err, 'INVALID_URL') || isZarisError(err, 'INVALID_ARGUMENT')
    io.err(`zaris: ${isZarisError(err) ? `${err.message} (${err.code})` : ((err as Error).message ?? String(err))}`)
    return usage ? 2 : 1
  } finally {
    await client?.close().catch(() => {})
  }
}

function run(client: Client, a: OnceArgs, io: Io): Promise<JobResult<number>> {
  const key = `${a.name}@${a.slot}`
  return client.jobs.once(
    a.name,
    a.slot,
    async (lock) => {
      const env = { ZARIS_LOCK_KEY: key, ZARIS_LOCK_TOKEN: String(lock.token), ZARIS_URL: a.url }
      // The job releases the lock once the outcome is recorded: nothing to release here.
      const code = await runUnder(a.command, { what: `the lock ${showKey(key)}`, env, signal: lock.signal, release: async () => {} }, io, { graceMs: a.graceMs })
      if (code !== 0) throw new CommandFailed(code)
      return code
    },
    a.options,
  )
}

/** Says what happened and picks the exit code. */
function report(a: OnceArgs, io: Io, result: JobResult<number>): number {
  if (a.json) io.out(JSON.stringify(result.status === 'failed' ? { ...result, error: errorJson(result.error) } : result))
  if (result.status === 'ran') return 0
  if (result.status === 'skipped') {
    if (!a.json) io.err(`zaris: slot ${showKey(a.slot)} of ${showKey(a.name)} ${result.state === 'running' ? 'is running' : `is ${result.state}`} (by ${result.by}, token ${result.token}); not running the command`)
    return 0
  }
  if (result.error instanceof CommandFailed) return result.error.code
  // The command exited 0, and its outcome could not be recorded: its lock ended first (70), or the store failed (1).
  const lost = isZarisError(result.error) && result.error.code !== 'UNAVAILABLE' && result.error.code !== 'INTERNAL'
  io.err(`zaris: the command ended, but its outcome was not recorded: ${(result.error as Error)?.message ?? String(result.error)}`)
  return lost ? EXIT_LOST : 1
}

function errorJson(error: unknown): { code?: string; message: string } {
  if (error instanceof CommandFailed) return { code: 'COMMAND_FAILED', message: error.message }
  const e = error as { code?: string; message?: string } | undefined
  return { ...(e?.code === undefined ? {} : { code: e.code }), message: e?.message ?? String(error) }
}
