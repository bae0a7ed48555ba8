/**
 * Runs the `zaris` command as a process of its own, the way a user types it,
 * with a clean environment: no ZARIS_URL or ZARIS_TOKEN leaks in from the
 * test's. The bin's source (src/cli/zaris.ts) is bundled with esbuild, as
 * tsup builds dist/cli.js (../server/cli-bundle.ts, one build shared by every
 * test file), so each run starts in a quarter of the time tsx takes.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { cliBundle } from '../server/cli-bundle'
import { root } from '../server/node-process'

/** What a finished run printed, and its exit code. */
export interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

function launch(args: string[], env: Record<string, string>): ChildProcess {
  const base = { ...process.env }
  delete base.ZARIS_URL
  delete base.ZARIS_TOKEN
  return spawn(process.execPath, [cliBundle(), ...args], { cwd: root, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
}

/** Runs `zaris ...args` to the end (killed after 20 s, which fails the test on its exit code). */
export function zaris(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const proc = launch(args, env)
    let stdout = ''
    let stderr = ''
    proc.stdout!.on('data', (d) => (stdout += d))
    proc.stderr!.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000)
    proc.once('error', reject)
    proc.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** A running `zaris` (for `watch`): its output so far, a wait for a line, and a signal to end it. */
export interface Running {
  stdout(): string
  stderr(): string
  /** Resolves once `stream` has printed text matching `pattern`. */
  waitFor(pattern: RegExp, stream?: 'stdout' | 'stderr'): Promise<void>
  /** Sends `signal` and resolves the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/** Starts `zaris ...args` and leaves it running. */
export function start(args: string[], env: Record<string, string> = {}): Running {
  const proc = launch(args, env)
  const out = { stdout: '', stderr: '' }
  const listeners = new Set<() => void>()
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  proc.stdout!.on('data', (d) => {
    out.stdout += d
    listeners.forEach((l) => l())
  })
  proc.stderr!.on('data', (d) => {
    out.stderr += d
    listeners.forEach((l) => l())
  })
  return {
    stdout: () => out.stdout,
    stderr: () => out.stderr,
    waitFor(pattern, stream = 'stdout') {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`zaris printed no ${pattern} on ${stream} within 15 s:\n${out.stdout}\n${out.stderr}`)), 15_000)
        const check = () => pattern.test(out[stream]) && done()
        const done = (err?: Error) => {
          clearTimeout(timer)
          listeners.delete(check)
          if (err) reject(err)
          else resolve()
        }
        listeners.add(check)
        void exited.then(() => done(pattern.test(out[stream]) ? undefined : new Error(`zaris exited before printing ${pattern}:\n${out.stdout}\n${out.stderr}`)))
        check()
      })
    },
    async stop(signal = 'SIGINT') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal)
      return exited
    },
  }
}

/** The JSON a `--json` run printed. */
export function json(ran: Ran): unknown {
  return JSON.parse(ran.stdout)
}
