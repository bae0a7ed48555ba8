/**
 * Runs a command while a hold lasts, for `zaris once`: the child inherits
 * the terminal and the environment, plus what the hold tells it
 * (`ZARIS_LOCK_KEY`, `ZARIS_LOCK_TOKEN`, `ZARIS_URL`).
 *
 * - The child exits: resolves its exit code (128 + the signal's number when
 *   a signal ended it, as a shell says).
 * - The hold ends first: says so on stderr, sends the child SIGTERM, then
 *   SIGKILL after the grace, and resolves {@link EXIT_LOST} once it is gone.
 * - `zaris` gets SIGINT, SIGTERM or SIGHUP: passed on to the child, and the
 *   runner goes on waiting for it.
 * - The command cannot be started: 127 (not found) or 126, as a shell says.
 *
 * The same contract as the runner of `zaris lock|elect|semaphore -- cmd`
 * (issue 34's `child.ts`), written here while that is not on main: one
 * module, so that `zaris once` takes that runner in its place by one import.
 *
 * @module
 */
import { spawn } from 'node:child_process'
import { constants } from 'node:os'
import type { Io } from './run'

/** Exit code when the hold ended before the command did (the command was stopped). */
export const EXIT_LOST = 70

/** What a command runs under: a hold, seen from the runner. */
export interface Guard {
  /** For messages: `the lock "job@2024-06-01"`. */
  what: string
  /** Added to the child's environment. */
  env: Record<string, string>
  /** Aborts when the hold ends before the command does; its reason says why. */
  signal: AbortSignal
  /** Called once the command has exited (a hold the caller releases itself: nothing). */
  release(): Promise<unknown>
}

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

/**
 * Runs `command` under `guard`; resolves the exit code.
 *
 * @example
 * const code = await runUnder(['./report.sh'], { what: 'the lock "report@2024-06-01"', env, signal: lock.signal, release: async () => {} }, io, { graceMs: 5_000 })
 */
export function runUnder(command: string[], guard: Guard, io: Io, options: { graceMs: number }): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command[0]!, command.slice(1), { stdio: 'inherit', env: { ...process.env, ...guard.env } })
    const running = () => child.exitCode === null && child.signalCode === null
    const forward = (s: NodeJS.Signals) => () => void (running() && child.kill(s))
    const forwards = FORWARDED.map((s) => [s, forward(s)] as const)
    for (const [s, f] of forwards) process.on(s, f)
    let lost = false
    let killer: ReturnType<typeof setTimeout> | undefined
    const onLost = () => {
      lost = true
      const reason = guard.signal.reason as { code?: string; message?: string } | undefined
      io.err(`zaris: lost ${guard.what}${reason?.code ? ` (${reason.code})` : ''}: ${reason?.message ?? 'the hold ended'}; stopping the command (SIGTERM, then SIGKILL after ${options.graceMs} ms)`)
      if (running()) child.kill('SIGTERM')
      killer = setTimeout(() => running() && child.kill('SIGKILL'), options.graceMs)
    }
    if (guard.signal.aborted) onLost()
    else guard.signal.addEventListener('abort', onLost, { once: true })
    let settled = false
    const finish = (code: number) => {
      if (settled) return
      settled = true
      clearTimeout(killer)
      for (const [s, f] of forwards) process.off(s, f)
      guard.signal.removeEventListener('abort', onLost)
      void guard.release().then(
        () => resolve(code),
        (err: Error) => {
          io.err(`zaris: could not release ${guard.what}: ${err.message} (it ends at its TTL)`)
          resolve(code)
        },
      )
    }
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return // it started: its 'exit' settles
      io.err(`zaris: cannot run ${JSON.stringify(command[0])}: ${err.code === 'ENOENT' ? 'command not found' : err.message}`)
      finish(err.code === 'ENOENT' ? 127 : 126)
    })
    child.once('exit', (code, signal) => {
      if (lost) io.err(`zaris: the command stopped after ${guard.what} was lost`)
      finish(lost ? EXIT_LOST : (code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0)))
    })
  })
}
