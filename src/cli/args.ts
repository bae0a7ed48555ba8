/**
 * Parsing the command line of every verb but `serve` (`zaris get|put|del|ls|
 * watch|locks|release|counter`, and `lock|elect|semaphore NAME -- cmd`) with
 * `node:util` `parseArgs`: one option table for every verb, then a check
 * that each option given belongs to the verb. A number like `-3` is an
 * argument (`zaris counter jobs -3`), not an option. For the verbs that run
 * a command, everything after the first `--` is that command, untouched.
 *
 * @module
 */
import { parseArgs } from 'node:util'
import { MAX_KEY_LENGTH } from '../core/contract/limits'
import { isReservedKey } from '../core/contract/reserved'

/** The connection string used when neither `--url` nor `ZARIS_URL` is given. */
export const DEFAULT_URL = 'zaris://127.0.0.1:7861/default'

/** A command-line mistake: printed with the usage, exit code 2. */
export class UsageError extends Error {}

const OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  ttl: { type: 'string' },
  string: { type: 'boolean' },
  force: { type: 'boolean' },
  from: { type: 'string' },
  wait: { type: 'string' },
  limit: { type: 'string' },
  grace: { type: 'string' },
  candidate: { type: 'string' },
  'fence-token': { type: 'string' },
  'fence-key': { type: 'string' },
} as const

/** Options only some verbs take. */
export type VerbOption = 'ttl' | 'string' | 'force' | 'from' | 'wait' | 'limit' | 'grace' | 'candidate' | 'fence-token' | 'fence-key'
const VERB_OPTIONS: VerbOption[] = ['ttl', 'string', 'force', 'from', 'wait', 'limit', 'grace', 'candidate', 'fence-token', 'fence-key']
/** Options whose value may look like a negative number. */
const VALUED = /^--(url|token|ttl|from|wait|limit|grace|candidate|fence-token|fence-key)$/

/** The verbs that run a command under a hold: what follows `--` is the command. */
export const RUN_VERBS = new Set(['lock', 'elect', 'semaphore'])

/** What every inspect command is given. */
export interface Parsed {
  verb: string | undefined
  args: string[]
  url: string
  token: string | undefined
  json: boolean
  help: boolean
  /** Verb options given, by name: their raw values. */
  options: Partial<Record<VerbOption, string | boolean>>
  /** The command after `--`, for the verbs that run one (else undefined). */
  command: string[] | undefined
  /** The environment it was parsed in (`ZARIS_LOCK_KEY` for a fenced write). */
  env: Record<string, string | undefined>
}

/**
 * Splits `argv` (after `zaris`) into the verb, its arguments and options.
 *
 * @example
 * parseCommandLine(['put', 'k', '1', '--ttl', '5000'], process.env)
 */
export function parseCommandLine(argv: string[], env: Record<string, string | undefined>): Parsed {
  const dashes = argv.indexOf('--')
  if (dashes >= 0) {
    const before = parseCommandLine(argv.slice(0, dashes), env)
    if (before.verb !== undefined && RUN_VERBS.has(before.verb)) return { ...before, command: argv.slice(dashes + 1) }
  }
  // Hide negative numbers from parseArgs, which would read `-3` as short options.
  const numbers = new Map<string, string>()
  const args = argv.map((arg, i) => {
    if (!/^-\d+$/.test(arg) || VALUED.test(argv[i - 1] ?? '')) return arg
    const slot = `\u0000${i}`
    numbers.set(slot, arg)
    return slot
  })
  let parsed
  try {
    parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true })
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
  const positionals = parsed.positionals.map((p) => numbers.get(p) ?? p)
  const v = parsed.values
  const options: Parsed['options'] = {}
  for (const name of VERB_OPTIONS) if (v[name] !== undefined) options[name] = v[name]
  return {
    verb: positionals[0],
    args: positionals.slice(1),
    url: v.url ?? env.ZARIS_URL ?? DEFAULT_URL,
    token: v.token ?? (env.ZARIS_TOKEN || undefined),
    json: v.json ?? false,
    help: v.help ?? false,
    options,
    command: undefined,
    env,
  }
}

/** A key from the command line: what the store would accept as a user key. */
export function keyArg(key: string, name = 'KEY'): string {
  if (key === '') throw new UsageError(`${name} must not be empty`)
  if (key.length > MAX_KEY_LENGTH) throw new UsageError(`${name} is ${key.length} characters long; the limit is ${MAX_KEY_LENGTH}`)
  if (isReservedKey(key)) throw new UsageError(`${name} must not start with U+0001: zaris keeps those keys for its wait lines, shared holds and permits`)
  return key
}

/** A positive whole number of milliseconds, or a whole number, from an option or argument. */
export function integerArg(raw: string, name: string, { min, max }: { min: number; max: number }): number {
  const n = Number(raw)
  if (!/^[+-]?\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`)
  }
  return n
}
