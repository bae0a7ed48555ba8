/**
 * What the tests start does not outlive a test process killed with
 * `kill -9` (a killed run, a crashed worker, Stryker stopped): Chromium
 * (real tabs, not Playwright's), redis-server, Postgres and a zaris node,
 * each with the processes it started, end with it, and the servers' data
 * folders go (./watched.ts).
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'
import { until } from '../conformance/util'

/** The ids of the live processes that `pgrep` finds with `flag` (`-g`: of a process group, `-P`: children of a process). */
function pgrep(flag: string, pid: number): number[] {
  try {
    return execFileSync('pgrep', [flag, String(pid)]).toString().trim().split('\n').map(Number)
  } catch {
    return [] // pgrep exits 1 when none match
  }
}

/** A started process's family: its process group and its children (Postgres's each lead a group of their own). */
function family(pid: number): number[] {
  return [...new Set([...pgrep('-g', pid), ...pgrep('-P', pid)])]
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

test('kill -9 of a test process ends the Chromium, redis-server, Postgres and zaris node it started, and their children', async () => {
  const fixture = fileURLToPath(new URL('./fixtures/start-and-wait.ts', import.meta.url))
  const child = spawn(process.execPath, ['--import', 'tsx', fixture], { stdio: ['ignore', 'pipe', 'inherit'] })
  try {
    const { pids, dirs } = await new Promise<{ pids: Record<string, number>; dirs: string[] }>((resolve, reject) => {
      let out = ''
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString()
        if (out.includes('\n')) resolve(JSON.parse(out) as { pids: Record<string, number>; dirs: string[] })
      })
      child.once('exit', (code) => reject(new Error(`the fixture exited (${code}) before it started everything`)))
    })
    expect(Object.keys(pids).sort()).toEqual(['chromium', 'node', 'postgres', 'redis'])
    const families = Object.fromEntries(Object.entries(pids).map(([what, pid]) => [what, family(pid)]))
    // Chromium's helpers, Postgres's background processes.
    expect(families.chromium!.length).toBeGreaterThan(1)
    expect(families.postgres!.length).toBeGreaterThan(1)
    for (const [what, pid] of Object.entries(pids)) expect(families[what], what).toContain(pid)
    child.kill('SIGKILL')
    const all = Object.values(families).flat()
    await until(() => all.every((pid) => !alive(pid)), 15_000)
    for (const [what, pids] of Object.entries(families)) expect(pids.filter(alive), what).toEqual([])
    // Their data folders (in /dev/shm: memory) went with them.
    expect(dirs).toHaveLength(2)
    await until(() => dirs.every((d) => !existsSync(d)), 5_000)
  } finally {
    child.kill('SIGKILL')
  }
}, 60_000)
