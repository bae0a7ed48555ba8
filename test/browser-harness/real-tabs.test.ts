/**
 * The real-tabs harness leaves no Chromium behind when its test process is
 * killed with `kill -9` (a killed run, a crashed worker): Chromium is not
 * Playwright's there, so only the harness's own watchdog ends it.
 */
import { execFileSync, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'
import { until } from '../conformance/util'

/** The ids of the processes in process group `pgid`. */
function group(pgid: number): number[] {
  try {
    return execFileSync('pgrep', ['-g', String(pgid)]).toString().trim().split('\n').map(Number)
  } catch {
    return [] // pgrep exits 1 when none match
  }
}

test('kill -9 of a test process that started real-tabs Chromium ends that Chromium and its children', async () => {
  const fixture = fileURLToPath(new URL('./fixtures/hold-real-tabs.ts', import.meta.url))
  const child = spawn(process.execPath, ['--import', 'tsx', fixture], { stdio: ['ignore', 'pipe', 'inherit'] })
  try {
    const pid = await new Promise<number>((resolve, reject) => {
      let out = ''
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString()
        if (out.includes('\n')) resolve(Number(out.trim()))
      })
      child.once('exit', (code) => reject(new Error(`the fixture exited (${code}) before it started Chromium`)))
    })
    // Chromium and its helpers (zygote, renderer for the open tab) run in its group.
    expect(group(pid).length).toBeGreaterThan(1)
    child.kill('SIGKILL')
    await until(() => group(pid).length === 0, 10_000)
    expect(group(pid)).toEqual([])
  } finally {
    child.kill('SIGKILL')
  }
}, 40_000)
