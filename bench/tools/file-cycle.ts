/**
 * The file row's zaris side alone, with what explains its tail: N acquire +
 * release cycles of one client on a `file://` store (in this process), with
 * proper-lockfile's cycle in turns. Reports ops/s, p50/p99/max, CPU per
 * cycle (process.cpuUsage), and the cycles slower than 1 ms; with `strace`
 * on PATH, the syscalls per cycle that reach the disk (fsync, fdatasync,
 * pwrite64) of the zaris turns.
 *
 *   npx tsx bench/tools/file-cycle.ts [cycles=3000] [turns=3]
 *
 * @module
 */
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import lockfile from 'proper-lockfile'
import { Client } from 'zaris'
import { fileAdapter } from 'zaris/file'
import { quantile } from '../lib/measure'
import { tempDir } from '../lib/procs'

const cycles = Number(process.argv[2] ?? 3000)
const turns = Number(process.argv[3] ?? 3)
const dir = tempDir('zaris-file-cycle-')

async function run(label: string, cycle: () => Promise<void>, trace: boolean): Promise<void> {
  for (let i = 0; i < 200; i++) await cycle()
  let strace: ReturnType<typeof spawn> | undefined
  let report = ''
  if (trace) {
    strace = spawn('strace', ['-f', '-c', '-p', String(process.pid), '-e', 'trace=fsync,fdatasync,pwrite64,pread64,fcntl'], { stdio: ['ignore', 'ignore', 'pipe'] })
    strace.stderr!.on('data', (d: Buffer) => (report += d.toString()))
    await new Promise((r) => setTimeout(r, 500))
  }
  const lat: number[] = []
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < cycles; i++) {
    const t = performance.now()
    await cycle()
    lat.push(performance.now() - t)
  }
  const ms = performance.now() - t0
  const c = process.cpuUsage(c0)
  const calls: Record<string, number> = {}
  if (strace) {
    strace.kill('SIGINT')
    await new Promise((r) => strace!.once('close', r))
    for (const line of report.split('\n')) {
      const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$/.exec(line)
      if (m) calls[m[2]!] = +(Number(m[1]) / cycles).toFixed(3)
    }
  }
  const slow = lat.filter((l) => l > 1)
  console.log(
    JSON.stringify({
      label,
      opsPerSec: Math.round((cycles / ms) * 1000),
      p50us: Math.round(quantile(lat, 0.5) * 1000),
      p99us: Math.round(quantile(lat, 0.99) * 1000),
      maxMs: +Math.max(...lat).toFixed(2),
      over1ms: slow.length,
      slowMsTotal: +slow.reduce((a, b) => a + b, 0).toFixed(1),
      cpuUsPerCycle: Math.round((c.user + c.system) / cycles),
      ...(trace ? { syscallsPerCycle: calls } : {}),
    }),
  )
}

const client = new Client(await fileAdapter({ path: join(dir.path, 'store.db'), namespace: 'bench' }))
const target = join(dir.path, 'resource')
writeFileSync(target, '')
const trace = process.env.TRACE === '1'
try {
  for (let t = 0; t < turns; t++) {
    await run('zaris file://', async () => {
      const lock = await client.locks.acquire('lock:file', { ttl: 30_000, wait: 0 })
      if (!lock) throw new Error('not free')
      await lock.release()
    }, trace)
    await run('proper-lockfile', async () => {
      const release = await lockfile.lock(target)
      await release()
    }, false)
  }
} finally {
  await client.close()
  dir.remove()
}
