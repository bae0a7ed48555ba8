/**
 * What `npm test` needs beyond node_modules, found before any test file runs
 * (vitest's global setup; also `npm run prereqs`, which .ci/run calls).
 *
 * Every program is one line of {@link NEEDS}: a backend whose tests start a
 * real server adds its line there. When something is missing:
 * - as root on a machine with apt-get, it is installed (one line says so) and
 *   the system services its package starts are stopped again, since the tests
 *   start their own on free ports;
 * - otherwise the run stops at once with one message naming what is missing
 *   and the command that installs it, instead of tests timing out one by one.
 *
 * `ZARIS_PREREQS_PATH` replaces PATH for this check alone (apt-get included),
 * so the missing-program paths can be tried on a machine that has everything.
 * Run directly: `tsx test/setup/prereqs.ts [--check]` (`--check` never installs).
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { findChromium, isExecutable, onPath } from '../browser-harness/chromium'
import { pgbouncerBin, postgresBin } from '../postgres/server'

/** One program the tests run. */
export interface Need {
  /** The program, as messages name it. */
  name: string
  /** What needs it, for the message. */
  why: string
  /** The environment variable that names a build of the user's own instead. */
  env: string
  /** Finds it, given the environment (with PATH) the check uses. */
  find(env: Env): string | undefined
  /** The Debian package that installs it. */
  apt: string
  /** System services that package starts on install (stopped again: tests start their own). */
  services: string[]
}

type Env = Record<string, string | undefined>

/** A program found by `env[variable]` if set, else by `binary` on PATH. */
const program = (binary: string, variable: string) => (env: Env) => {
  const own = env[variable]
  if (own) return isExecutable(own) || onPath(own, env.PATH) ? own : undefined
  return onPath(binary, env.PATH)
}

/** Everything the suite needs: a later backend adds a line. */
export const NEEDS: Need[] = [
  { name: 'chromium', why: 'browser and tab tests', env: 'ZARIS_CHROMIUM', find: findChromium, apt: 'chromium', services: [] },
  { name: 'redis-server', why: 'Redis adapter and Redis-backed node tests', env: 'ZARIS_REDIS_SERVER', find: program('redis-server', 'ZARIS_REDIS_SERVER'), apt: 'redis-server', services: ['redis-server'] },
  { name: 'redis-cli', why: 'the Redis Cluster test', env: 'ZARIS_REDIS_CLI', find: program('redis-cli', 'ZARIS_REDIS_CLI'), apt: 'redis-tools', services: [] },
  { name: 'etcd', why: 'etcd adapter tests', env: 'ZARIS_ETCD', find: program('etcd', 'ZARIS_ETCD'), apt: 'etcd-server', services: ['etcd'] },
  { name: 'postgres', why: 'Postgres adapter tests', env: 'ZARIS_POSTGRES_BIN', find: (env) => postgresBin(env), apt: 'postgresql', services: ['postgresql'] },
  { name: 'pgbouncer', why: 'the Postgres adapter through PgBouncer', env: 'ZARIS_PGBOUNCER', find: (env) => pgbouncerBin(env), apt: 'pgbouncer', services: ['pgbouncer', 'pgbouncer.socket'] },
]

/** What the check does about the machine it finds. */
export type Decision =
  | { kind: 'ready' }
  | { kind: 'install'; packages: string[]; line: string }
  | { kind: 'stop'; message: string }

/** Who runs the check: root with apt-get may install. */
export interface Runner {
  canInstall: boolean
  hasApt: boolean
}

/** The needs not found in `env`. */
export function missing(needs: Need[], env: Env): Need[] {
  return needs.filter((n) => n.find(env) === undefined)
}

/**
 * The decision for the needs that are missing, and its one line or message.
 *
 * @example
 * decide(missing(NEEDS, process.env), { canInstall: false, hasApt: true })
 */
export function decide(absent: Need[], env: Env, runner: Runner): Decision {
  if (absent.length === 0) return { kind: 'ready' }
  const packages = [...new Set(absent.map((n) => n.apt))]
  const names = absent.map((n) => `${n.name} (${n.why})`).join(', ')
  // A variable pointing at nothing is the user's own setting: installing a package would not change it.
  const wrongVariables = absent.filter((n) => env[n.env])
  if (runner.canInstall && runner.hasApt && wrongVariables.length === 0) {
    return { kind: 'install', packages, line: `zaris tests: installing ${packages.join(' ')} with apt-get (missing: ${absent.map((n) => n.name).join(', ')}); its services are stopped after, the tests start their own` }
  }
  const lines = [`zaris tests: npm test needs programs that are not on this machine: ${names}.`]
  for (const n of wrongVariables) lines.push(`  ${n.env} is set to ${JSON.stringify(env[n.env])}, which is not an executable: fix or unset it.`)
  const installable = absent.filter((n) => !env[n.env])
  if (installable.length > 0) {
    const command = `apt-get install -y ${[...new Set(installable.map((n) => n.apt))].join(' ')}`
    lines.push(runner.hasApt ? `Install them with:\n  sudo ${command}` : `Install them with your system's package manager (on Debian or Ubuntu: sudo ${command}).`)
    lines.push(`Or name your own builds with ${installable.map((n) => n.env).join(', ')}.`)
  }
  return { kind: 'stop', message: lines.join('\n') }
}

/** The environment the check looks in: ZARIS_PREREQS_PATH, when set, stands for PATH. */
export function checkEnv(env: Env = process.env): Env {
  return env.ZARIS_PREREQS_PATH === undefined ? env : { ...env, PATH: env.ZARIS_PREREQS_PATH }
}

/**
 * Finds what is missing and installs it or explains; resolves the message
 * to stop with, or `undefined` when the suite can run.
 */
export async function ensurePrereqs(options: { install?: boolean; env?: Env; log?: (line: string) => void } = {}): Promise<string | undefined> {
  const env = checkEnv(options.env ?? process.env)
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
  const runner = { canInstall: (options.install ?? true) && process.getuid?.() === 0, hasApt: onPath('apt-get', env.PATH) !== undefined }
  const absent = missing(NEEDS, env)
  const decision = decide(absent, env, runner)
  if (decision.kind === 'ready') return undefined
  if (decision.kind === 'stop') return decision.message
  log(decision.line)
  const failure = aptInstall(decision.packages, options.env ?? process.env)
  stopServices(absent.flatMap((n) => n.services))
  if (failure) return `zaris tests: apt-get could not install ${decision.packages.join(' ')}:\n${failure}`
  const still = missing(NEEDS, env)
  if (still.length > 0) return `zaris tests: after apt-get install, still missing: ${still.map((n) => n.name).join(', ')}`
  return undefined
}

/** apt-get update and install, quietly, with the real PATH; resolves apt's output when it fails. */
function aptInstall(packages: string[], env: Env): string | undefined {
  const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' }
  for (const args of [['update', '-qq'], ['install', '-y', '-qq', '--no-install-recommends', ...packages]]) {
    const r = spawnSync('apt-get', args, { env: aptEnv, encoding: 'utf8' })
    if (r.status !== 0) return `${r.error?.message ?? ''}${r.stdout}${r.stderr}`.trim()
  }
  return undefined
}

/** Stops the system services a package started (systemd, else its init script); quiet when none runs. */
function stopServices(services: string[]): void {
  const systemd = existsSync('/run/systemd/system')
  for (const service of new Set(services)) {
    if (systemd) spawnSync('systemctl', ['stop', service], { stdio: 'ignore' })
    else if (existsSync(`/etc/init.d/${service}`)) spawnSync(`/etc/init.d/${service}`, ['stop'], { stdio: 'ignore' })
  }
}

const once = Symbol.for('zaris.prereqs')

/**
 * vitest global setup (both projects inherit it from the root config, so it
 * is asked more than once per run: the first check is kept). A missing
 * program ends the run here with the message and exit code 1.
 */
export default async function setup(): Promise<void> {
  const memo = globalThis as { [once]?: Promise<string | undefined> }
  const message = await (memo[once] ??= ensurePrereqs())
  if (message !== undefined) {
    process.stderr.write(`\n${message}\n\n`)
    process.exit(1)
  }
}

// `tsx test/setup/prereqs.ts [--check]`: the same step outside vitest (npm run prereqs, .ci/run).
if (process.argv[1] !== undefined && /[\\/]test[\\/]setup[\\/]prereqs\.ts$/.test(process.argv[1])) {
  const message = await ensurePrereqs({ install: !process.argv.includes('--check') })
  if (message !== undefined) {
    process.stderr.write(`${message}\n`)
    process.exitCode = 1
  }
}
