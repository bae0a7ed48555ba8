/**
 * Client processes for the fault tests: spawn a worker (worker.ts) with its
 * own history file, signal it (kill -9, SIGSTOP, SIGCONT), wait for what it
 * prints, and read back its history. Every process started here is tracked
 * so a test can end them all in `afterAll`.
 */
import type { ChildProcess } from 'node:child_process'
import { spawnWatched } from '../setup/watched'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { HistoryEvent } from '../lincheck/history'
import { bundle } from '../server/cli-bundle'
import type { HistoryRecord } from './checker'
import type { JobWorkerConfig } from './job-worker'
import { readHistory, readOperations } from './recorder'
import type { WorkerConfig } from './worker'

export const root = resolve(import.meta.dirname, '../..')

const WORKER = 'test/faults/worker.ts'
/** A scheduled job's instance (job-worker.ts), for the fleet test. */
export const JOB_WORKER = 'test/faults/job-worker.ts'
const SHIFT_CLOCK = 'test/faults/shift-clock.ts'

/**
 * The worker and the clock shifter, bundled with esbuild once per state of
 * their sources (../server/cli-bundle.ts) instead of loaded through tsx: a
 * worker starts in ~0.3 s instead of ~1.2 s (more on a loaded machine), and
 * the fault tests start dozens.
 */
const workerScripts = () => bundle('zaris-fault-worker', [WORKER, JOB_WORKER, SHIFT_CLOCK], ['test/faults', 'test/lincheck'])

export interface WorkerProcess {
  id: string
  proc: ChildProcess
  log: string
  /** What it printed (stdout and stderr). */
  output(): string
  /** Resolves when it exits: its code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  alive(): boolean
  kill9(): Promise<void>
  pause(): void
  resume(): void
  history(): HistoryRecord[]
  /** Its client's store operations (Jepsen shape). */
  operations(): HistoryEvent[]
  /** Resolves the first match of `pattern` in its output. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>
}

/** A place for history files, removed by `dispose()`, with every process it started. */
export class Workspace {
  readonly dir = mkdtempSync(join(tmpdir(), 'zaris-faults-'))
  readonly workers: WorkerProcess[] = []

  /**
   * Starts a worker (or, with `entry`, another script of the suite taking a
   * config of its own); `clock` sets ZARIS_CLOCK_OFFSET_MS / ZARIS_CLOCK_JUMPS through shift-clock.ts.
   */
  spawn(config: Omit<WorkerConfig, 'log' | 'firstProcess'> | Omit<JobWorkerConfig, 'log' | 'firstProcess'>, clock?: { offsetMs?: number; jumps?: string }, entry = WORKER): WorkerProcess {
    // One file per process, even when a test reuses a client id; process numbers of its own.
    const log = join(this.dir, `${config.id}.${this.workers.length}.jsonl`)
    const full = { ...config, log, firstProcess: (this.workers.length + 1) * 10_000 }
    const imports = clock ? ['--import', pathToFileURL(workerScripts()[SHIFT_CLOCK]!).href] : []
    const env: NodeJS.ProcessEnv = { ...process.env }
    if (clock?.offsetMs !== undefined) env.ZARIS_CLOCK_OFFSET_MS = String(clock.offsetMs)
    if (clock?.jumps !== undefined) env.ZARIS_CLOCK_JUMPS = clock.jumps
    const proc = spawnWatched(process.execPath, [...imports, workerScripts()[entry]!, JSON.stringify(full)], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    proc.stdout!.on('data', (d) => (out += d))
    proc.stderr!.on('data', (d) => (out += d))
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => proc.once('exit', (code, signal) => done({ code, signal })))
    const alive = () => proc.exitCode === null && proc.signalCode === null
    const worker: WorkerProcess = {
      id: config.id,
      proc,
      log,
      output: () => out,
      exited,
      alive,
      async kill9() {
        if (!alive()) return
        proc.kill('SIGKILL')
        await exited
      },
      pause: () => void (alive() && proc.kill('SIGSTOP')),
      resume: () => void (alive() && proc.kill('SIGCONT')),
      history: () => readHistory([log]),
      operations: () => readOperations([log]),
      waitFor: (pattern, timeoutMs = 30_000) => waitFor(() => out, pattern, timeoutMs, () => !alive()),
    }
    this.workers.push(worker)
    return worker
  }

  /** The histories of every worker started here. */
  history(): HistoryRecord[] {
    return readHistory(this.workers.map((w) => w.log))
  }

  /** The store operations of every worker started here. */
  operations(): HistoryEvent[] {
    return readOperations(this.workers.map((w) => w.log))
  }

  /** kill -9 (after SIGCONT, in case it was stopped) whatever still runs, and removes the directory. */
  async dispose(): Promise<void> {
    await Promise.all(
      this.workers.map(async (w) => {
        w.resume()
        await w.kill9()
      }),
    )
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** Polls `get()` until `pattern` matches; fails after `timeoutMs` or once `gone()`. */
export function waitFor(get: () => string, pattern: RegExp, timeoutMs = 30_000, gone: () => boolean = () => false): Promise<RegExpExecArray> {
  const deadline = performance.now() + timeoutMs
  return new Promise((resolve, reject) => {
    const tick = () => {
      const m = pattern.exec(get())
      if (m) return resolve(m)
      if (gone()) return reject(new Error(`the process ended without printing ${pattern}:\n${get().slice(-2000)}`))
      if (performance.now() > deadline) return reject(new Error(`nothing matched ${pattern} within ${timeoutMs} ms:\n${get().slice(-2000)}`))
      setTimeout(tick, 10)
    }
    tick()
  })
}

/** Polls `check()` until it is true. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 30_000, what = 'the condition'): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
