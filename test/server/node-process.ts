/**
 * Starts `zaris serve` as an OS process of its own, the way users run it
 * (the bin: src/cli/zaris.ts bundled as tsup bundles dist/cli.js, see
 * cli-bundle.ts), and reads the address from the one line it prints.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { spawnWatched } from '../setup/watched'
import { createServer } from 'node:net'
import { resolve } from 'node:path'
import { cliBundle } from './cli-bundle'

export const root = resolve(import.meta.dirname, '../..')

export interface NodeProcess {
  /** `http://127.0.0.1:PORT` */
  url: string
  port: number
  proc: ChildProcess
  /** Everything the process wrote so far. */
  output(): string
  /** SIGTERM, and resolves the exit code. */
  stop(): Promise<number | null>
  /** SIGKILL (kill -9), resolves once it is gone. */
  kill9(): Promise<void>
}

/** Runs `serve` with `args`; resolves once it listens. */
export async function startNode(args: string[] = [], env: Record<string, string> = {}): Promise<NodeProcess> {
  const proc = spawnWatched(process.execPath, [cliBundle(), 'serve', '--port', '0', ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  proc.stdout!.on('data', (d) => (out += d))
  proc.stderr!.on('data', (d) => (out += d))
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the node did not start within 20 s:\n${out}`)), 20_000)
    const check = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        proc.stdout!.off('data', check)
        resolve(m[1]!)
      }
    }
    proc.stdout!.on('data', check)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`the node exited with ${code} before listening:\n${out}`))
    })
  })
  return {
    url,
    port: Number(new URL(url).port),
    proc,
    output: () => out,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode
      proc.kill('SIGTERM')
      return exited
    },
    async kill9() {
      if (proc.exitCode !== null || proc.signalCode !== null) return
      proc.kill('SIGKILL')
      await exited
    },
  }
}

/** Runs `serve` with `args` and resolves its exit code and output (for refusals). */
export function runServe(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [cliBundle(), 'serve', ...args], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    proc.stdout.on('data', (d) => (out += d))
    proc.stderr.on('data', (d) => (out += d))
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000)
    proc.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, output: out })
    })
  })
}

/** A loopback port nothing listens on now: for a node that must come back at the same address after a restart. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })
}
