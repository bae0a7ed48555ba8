/**
 * The durable row's zaris side, measured by what does not depend on how busy
 * the shared disk is: a `--data` node runs N acquire + release cycles of one
 * client, and the tool reports the node's syscalls that reach the disk
 * (strace -c: fsync/fdatasync and writes, per cycle), its CPU time per cycle
 * (from /proc), and the wall-clock ops/s for reference. For A/B of two trees
 * (bench/FINDINGS.md §18).
 *
 *   npx tsx bench/tools/durable-ab.ts [cycles=300]
 *
 * @module
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Client } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { node, tempDir } from '../lib/procs'

const cycles = Number(process.argv[2] ?? 300)
const dir = tempDir('zaris-durable-ab-')
const n = await node(['--data', join(dir.path, 'ab.db')])
const pid = n.proc.pid!
const client = new Client(httpAdapter({ endpoints: [n.url], namespace: 'ab' }))
/** utime + stime of the node process (every thread), in ms. */
const cpu = () => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100
}
try {
  for (let i = 0; i < 50; i++) await (await client.locks.acquire('lock:ab', { ttl: 30_000 }))!.release()
  const strace = spawn('strace', ['-f', '-c', '-p', String(pid), '-e', 'trace=fsync,fdatasync,pwrite64,write,writev'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let report = ''
  strace.stderr.on('data', (d: Buffer) => (report += d.toString()))
  await new Promise((r) => setTimeout(r, 500)) // attached
  const c0 = cpu()
  const t0 = performance.now()
  for (let i = 0; i < cycles; i++) await (await client.locks.acquire('lock:ab', { ttl: 30_000 }))!.release()
  const ms = performance.now() - t0
  const c1 = cpu()
  strace.kill('SIGINT')
  await new Promise((r) => strace.once('close', r))
  const calls: Record<string, number> = {}
  for (const line of report.split('\n')) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$/.exec(line)
    if (m) calls[m[2]!] = +(Number(m[1]) / cycles).toFixed(2)
  }
  console.log(JSON.stringify({ opsPerSec: Math.round((cycles / ms) * 1000), nodeCpuMsPerCycle: +((c1 - c0) / cycles).toFixed(3), syscallsPerCycle: calls }))
} finally {
  await client.close()
  await n.stop()
  dir.remove()
}
