/**
 * Runs a command while a hold lasts (`zaris lock|elect|semaphore ... -- cmd`,
 * and any verb that runs a command under a hold): the child inherits the
 * terminal and the environment, plus what the hold tells it
 * (`ZARIS_LOCK_KEY`, `ZARIS_LOCK_TOKEN`, `ZARIS_URL`).
 *
 * - The child exits: the hold is released, and `zaris` exits with the
 *   child's code (128 + the signal's number when a signal ended it, as a
 *   shell says).
 * - The hold ends first (stolen, expired, a renewal refused, the store out
 *   of reach past the TTL): `zaris` says so on stderr, sends the child
 *   SIGTERM, then SIGKILL after the grace, and exits {@link EXIT_LOST} once
 *   it has gone.
 * - `zaris` gets SIGINT, SIGTERM or SIGHUP: it passes it on to the child
 *   and goes on waiting for it (then releases, as above).
 * - The command cannot be started: 127 (not found) or 126 (not runnable),
 *   as a shell says; the hold is released.
 *
 * What this does not cover: `kill -9` of `zaris` itself leaves the child
 * running without the hold (the store frees it at the TTL, or at once on a
 * `file://` store). Run both in a process group you can kill whole, and
 * fence the child's writes with the token.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { constants } from 'node:os'
import type { Io } from './run'

/** Exit code when the hold ended before the command did (the command was stopped). */
export const EXIT_LOST = 70

/** What a command runs under: a hold, seen from the runner. */
export interface Guard {
  /** For messages: `the lock "job"`. */
  what: string
  /** Added to the child's environment. */
  env: Record<string, string>
  /** Aborts when the hold ends before the command does; its reason says why. */
  signal: AbortSignal
  /** Ends the hold, once the command has exited. */
  release(): Promise<unknown>
}

/** How the runner stops a command whose hold ended. */
export interface RunnerOptions {
  /** Ms between SIGTERM and SIGKILL. */
  graceMs: number
}

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

/**
 * Runs `command` under `guard`; resolves the exit code `zaris` should exit with.
 *
 * @example
 * process.exitCode = await runUnder(['make', 'deploy'], { what: 'the lock "deploy"', env, signal: lock.signal, release: () => lock.release() }, io, { graceMs: 5_000 })
 */
export function runUnder(command: string[], guard: Guard, io: Io, options: RunnerOptions): Promise<number> {
  return new Promise((resolve) => {
    // The handlers go in before the child starts: a child that prints at once can be answered with a
    // signal before the line after spawn() runs, and an unhandled SIGTERM would end zaris with the hold.
    let started: ChildProcess | undefined
    const forward = Object.fromEntries(FORWARDED.map((s) => [s, () => void (started && running() && started.kill(s))]))
    for (const s of FORWARDED) process.on(s, forward[s]!)
    const child = (started = spawn(command[0]!, command.slice(1), { stdio: 'inherit', env: { ...process.env, ...guard.env } }))
    const running = () => child.exitCode === null && child.signalCode === null
    let lost = false
    let settled = false
    let killer: ReturnType<typeof setTimeout> | undefined
    const onLost = () => {
      if (settled) return
      lost = true
      const reason = guard.signal.reason as { code?: string; message?: string } | undefined
      io.err(`zaris: lost ${guard.what}${reason?.code ? ` (${reason.code})` : ''}: ${reason?.message ?? 'the hold ended'}; stopping the command (SIGTERM, then SIGKILL after ${options.graceMs} ms)`)
      if (running()) child.kill('SIGTERM')
      killer = setTimeout(() => running() && child.kill('SIGKILL'), options.graceMs)
    }
    if (guard.signal.aborted) onLost()
    else guard.signal.addEventListener('abort', onLost, { once: true })
    const finish = async (code: number) => {
      if (settled) return
      settled = true
      clearTimeout(killer)
      for (const s of FORWARDED) process.off(s, forward[s]!)
      guard.signal.removeEventListener('abort', onLost)
      // A lost hold is released too: harmless, and it leaves the line if it waited.
      await guard.release().catch((err: Error) => io.err(`zaris: could not release ${guard.what}: ${err.message} (it ends at its TTL)`))
      resolve(code)
    }
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return // it started: a later error (a failed kill) changes nothing, 'exit' settles
      io.err(`zaris: cannot run ${JSON.stringify(command[0])}: ${err.code === 'ENOENT' ? 'command not found' : err.message}`)
      void finish(err.code === 'ENOENT' ? 127 : 126)
    })
    child.once('exit', (code, signal) => {
      if (lost) {
        io.err(`zaris: the command stopped after ${guard.what} was lost`)
        return void finish(EXIT_LOST)
      }
      void finish(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0))
    })
  })
}
