/**
 * The bench's handover row (`handover` group: one holder and 8 waiters
 * through a node with a memory store, the line let settle 20 ms between
 * handovers) for this tree and another checkout side by side, taking turns:
 * each side its own node process (built from its own src/ as the tests
 * build it) and its own client library, all clients in this process. Prints
 * per side the handover's p50 / p90 (release call to the next holder's
 * grant) over every trial, and the CPU per cycle (a handover and the last
 * holder queuing again) of its node process and of this process.
 *
 *   BASE=/work/main npx tsx bench/tools/handover-ab.ts [trials=6] [rounds=40] [clients=9]
 *
 * With clients=16 and `contend`, it runs the contention row instead (every
 * client takes and releases as fast as it can for 3 s a trial):
 * successes/s, p50 / p99 to hold, node CPU per success.
 *
 * Also the floor under a handover with no zaris code, taken in the same
 * turns: a JSON line to a bare Node TCP echo process and back (Nagle off),
 * after the same 20 ms of idle (both processes asleep, as in a handover).
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import { fork, spawn } from 'node:child_process'
import net from 'node:net'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { handovers } from '../lib/handover'
import { contention, type LockPeer } from '../lib/locks'
import { median, quantile } from '../lib/measure'

if (process.argv[2] === 'echo') {
  const server = net.createServer((c) => {
    c.setNoDelay(true)
    c.on('data', (d) => c.write(d))
  })
  server.listen(0, '127.0.0.1', () => process.send!((server.address() as net.AddressInfo).port))
  await new Promise(() => {})
}

const trials = Number(process.argv[2] ?? 6)
const rounds = Number(process.argv[3] ?? 40)
const clients = Number(process.argv[4] ?? 9)
const contend = process.argv.includes('contend')
const here = resolve(fileURLToPath(import.meta.url), '../../..')
const base = process.env.BASE
if (!base) throw new Error('BASE=/path/to/other/checkout is needed (e.g. /work/main)')

interface Side {
  name: string
  pid: number
  peers: LockPeer[]
  stop(): void
  lat: number[]
  ops: number
  ms: number
  nodeMs: number
  selfMs: number
}

/** A node from `root`'s sources, and `clients` clients of `root`'s library on it. */
async function side(name: string, root: string): Promise<Side> {
  const { cliBundle } = (await import(`${root}/test/server/cli-bundle.ts`)) as { cliBundle(): string }
  const proc = spawn(process.execPath, [cliBundle(), 'serve', '--port', '0'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
  process.on('exit', () => proc.kill('SIGKILL'))
  const url = await new Promise<string>((ok) => {
    let out = ''
    proc.stdout!.on('data', (d) => {
      out += d
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (m) ok(m[1]!)
    })
  })
  const { Client } = (await import(`${root}/src/index.ts`)) as typeof import('../../src/index')
  const { httpAdapter } = (await import(`${root}/src/adapters/http/index.ts`)) as typeof import('../../src/adapters/http/index')
  const peers: LockPeer[] = Array.from({ length: clients }, () => {
    const client = new Client(httpAdapter({ endpoints: [url], namespace: 'bench' }))
    return {
      async acquire(key: string, waitMs: number) {
        const lock = await client.locks.acquire(key, { ttl: 30_000, wait: waitMs })
        return lock && (() => lock.release())
      },
      attempts: async () => 0,
      close: () => client.close(),
    }
  })
  return { name, pid: proc.pid!, peers, stop: () => proc.kill('SIGTERM'), lat: [], ops: 0, ms: 0, nodeMs: 0, selfMs: 0 }
}

/** CPU ms of process `pid` so far (user + system, 10 ms ticks). */
function cpuOf(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(f[11]) + Number(f[12])) * 10
}

const sides = [await side('this tree', here), await side(`BASE ${base}`, base)]
const echo = fork(fileURLToPath(import.meta.url), ['echo'], { execArgv: ['--import', 'tsx'] })
const echoPort = await new Promise<number>((ok) => echo.once('message', (m) => ok(m as number)))
const echoSocket = net.connect(echoPort, '127.0.0.1').setNoDelay(true)
await new Promise((ok) => echoSocket.once('connect', ok))
const floor: number[] = []
/** `n` echo round trips, each after 20 ms of idle, as long as a release frame. */
async function echoes(n: number): Promise<void> {
  const line = `${JSON.stringify({ id: 3, path: '/v1/bench/commit', body: { checks: [{ key: 'lock:h0', created: 22 }], ops: [{ type: 'delete', key: 'lock:h0' }], requestId: 'x'.repeat(34), seen: 22 } })}\n`
  for (let i = 0; i < n; i++) {
    await new Promise((ok) => setTimeout(ok, 20))
    const t0 = performance.now()
    echoSocket.write(line)
    await new Promise((ok) => echoSocket.once('data', ok))
    floor.push(performance.now() - t0)
  }
}
// Warm-up, untimed.
for (const s of sides) await (contend ? contention(s.peers, 'lock:warm', 500) : handovers(s.peers, 'lock:warm', 10, 20))
for (let t = 0; t < trials; t++) {
  for (const s of t % 2 === 0 ? sides : [...sides].reverse()) {
    const n0 = cpuOf(s.pid)
    const c0 = process.cpuUsage()
    const r = contend ? await contention(s.peers, `lock:c${t}`, 3_000) : await handovers(s.peers, `lock:h${t}`, rounds, 20)
    const c = process.cpuUsage(c0)
    s.nodeMs += cpuOf(s.pid) - n0
    s.selfMs += (c.user + c.system) / 1000
    s.lat.push(...r.lat)
    s.ops += r.ops
    s.ms += r.ms
  }
  if (!contend) await echoes(rounds)
}
const f = (v: number) => v.toFixed(3)
for (const s of sides) {
  const per = (ms: number) => ((ms / s.ops) * 1000).toFixed(0)
  const head = contend ? `${((s.ops * 1000) / s.ms).toFixed(0)} successes/s, to hold p50 ${f(median(s.lat))} ms, p99 ${f(quantile(s.lat, 0.99))} ms` : `handover p50 ${f(median(s.lat))} ms, p90 ${f(quantile(s.lat, 0.9))} ms`
  console.log(`${s.name.padEnd(22)} ${head} (n=${s.lat.length}); CPU per ${contend ? 'success' : 'cycle'}: node ${per(s.nodeMs)} µs, clients ${per(s.selfMs)} µs`)
}
if (!contend) console.log(`${'floor (echo)'.padEnd(22)} round trip p50 ${f(median(floor))} ms, p90 ${f(quantile(floor, 0.9))} ms (n=${floor.length}), after 20 ms idle`)
await Promise.allSettled(sides.flatMap((s) => s.peers.map((p) => p.close())))
for (const s of sides) s.stop()
echoSocket.destroy()
echo.kill()
process.exit(0)
