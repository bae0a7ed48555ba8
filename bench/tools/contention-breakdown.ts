/**
 * Where a contended success goes (issue 31): N clients contend for one lock
 * as the bench's contention rows do (acquire with wait, release at once, go
 * again), on the in-process memory store, a node (memory) or a `--data`
 * node. Prints successes/s, the time from asking to holding (p50, p99), the
 * spread of successes between clients, the calls each success costs by kind
 * (counted at each client's adapter), and the CPU each success costs in this
 * process and in the node's. With `profile`, writes V8 CPU profiles of both
 * (bench/tools/cpuprofile.ts summarises them).
 *
 *   npx tsx bench/tools/contention-breakdown.ts [memory|node|data|redis|etcd] [clients=16] [seconds=3] [profile]
 *
 * SEM=3 takes permits of a semaphore of limit 3 instead (the bench's 8/3 row: `SEM=3 … redis 8`);
 * BYKEY=1 splits the calls by what they touch (a lock or slot key, a place
 * in line) and, for commits, by their ops.
 *
 * (redis and etcd: the zaris adapter on a server of the tool's own; the
 * server's CPU is not counted.)
 *
 * @module
 */
import { spawn } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { Client, type Adapter } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { memoryAdapter } from 'zaris/memory'
import { contention, shares, type LockPeer } from '../lib/locks'
import { quantile } from '../lib/measure'
import { etcd as startEtcd, node, redis as startRedis, tempDir } from '../lib/procs'
import { cliBundle } from '../../test/server/cli-bundle'
import { summarise } from './cpuprofile'
import { QUEUE_PREFIX, SEP } from '../../src/core/contract/reserved'

const [where = 'node', n = '16', secs = '3', profile] = process.argv.slice(2)
const clients = Number(n)
/** SEM=n: the clients take permits of a semaphore of limit n instead of a lock. */
const SEM = Number(process.env.SEM ?? 0)
const seconds = Number(secs)

const BYKEY = process.env.BYKEY === '1'

/** What a call touches (BYKEY): the class of its first key (`lock`, `slot`, `line`), and a commit's op types. */
function touched(method: string | symbol, args: unknown[]): string {
  const commit = method === 'commit'
  const ops = commit ? (args[1] as { type: string; key: string }[]) : []
  const key = commit ? (ops[0]?.key ?? (args[0] as { key: string }[])[0]?.key ?? '') : String(args[0] ?? '')
  const what = key.startsWith(QUEUE_PREFIX) ? 'line' : key.startsWith(`${SEP}p`) ? 'slot' : 'lock'
  return commit ? `${what}:${ops.map((o) => o.type).join('+')}` : what
}

/** The calls a client's adapter made, by kind (a commit that waits at the store counts as `park`). */
const calls = new Map<string, number>()
function counted(inner: Adapter): Adapter {
  const count = (k: string) => calls.set(k, (calls.get(k) ?? 0) + 1)
  return new Proxy(inner, {
    get(target, p) {
      const v = Reflect.get(target, p, target) as unknown
      if (typeof v !== 'function') return v
      return (...args: unknown[]) => {
        const kind = p === 'commit' && (args[2] as { waitChange?: number } | undefined)?.waitChange ? 'park' : String(p)
        count(BYKEY ? `${kind}:${touched(p, args)}` : kind)
        return (v as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
}

function peerOf(adapter: Adapter): LockPeer {
  const client = new Client(counted(adapter))
  return {
    async acquire(key, waitMs) {
      const lock = SEM ? await client.semaphores.acquire(key, { limit: SEM, ttl: 30_000, wait: waitMs }) : await client.locks.acquire(key, { ttl: 30_000, wait: waitMs })
      return lock && (() => lock.release())
    },
    attempts: async () => 0,
    close: () => client.close(),
  }
}

/** A node under `--cpu-prof` (not allowed in NODE_OPTIONS): the profile is written when it stops. */
async function profiledNode(args: string[]): Promise<{ url: string; proc: ReturnType<typeof spawn>; stop(): Promise<void> }> {
  const proc = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, cliBundle(), 'serve', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
  process.on('exit', () => proc.kill('SIGKILL'))
  const url = await new Promise<string>((resolve) => {
    let out = ''
    proc.stdout!.on('data', (d) => {
      out += d
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (m) resolve(m[1]!)
    })
  })
  return { url, proc, stop: () => new Promise<void>((r) => (proc.once('exit', () => r()), proc.kill('SIGTERM'))) }
}

/** CPU ms of a process so far (user + system), from /proc. */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

const dir = tempDir('zaris-contention-')
const profDir = join(tmpdir(), `zaris-contention-prof-${process.pid}`)
mkdirSync(profDir, { recursive: true })
const args = where === 'data' ? ['--data', join(dir.path, 'c.db')] : []
const direct = where === 'memory' || where === 'redis' || where === 'etcd'
const server = direct ? undefined : profile ? await profiledNode(args) : await node(args)
const redisServer = where === 'redis' ? await startRedis() : undefined
const etcdServer = where === 'etcd' ? await startEtcd() : undefined
const shared = where === 'memory' ? memoryAdapter({ namespace: `c${process.pid}` }) : undefined
const adapterOf = async (): Promise<Adapter> => {
  if (shared) return shared
  if (redisServer) return (await import('zaris/redis')).redisAdapter({ url: `redis://127.0.0.1:${redisServer.port}/0`, namespace: 'bench' })
  if (etcdServer) return (await import('zaris/etcd')).etcdAdapter({ hosts: [etcdServer.url], namespace: 'bench' })
  return httpAdapter({ endpoints: [server!.url], namespace: 'bench' })
}
const peers = await Promise.all(Array.from({ length: clients }, async () => peerOf(await adapterOf())))

await contention(peers, 'lock:warm', 500)
calls.clear()
const session = profile ? new Session() : undefined
if (session) {
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.start')
}
const cpu0 = process.cpuUsage()
const nodeCpu0 = server ? cpuOf(server.proc.pid!) : 0
const t = await contention(peers, 'lock:c', seconds * 1000)
const cpu = process.cpuUsage(cpu0)
const nodeCpu = server ? cpuOf(server.proc.pid!) - nodeCpu0 : 0
if (session) {
  const { profile: p } = await session.post('Profiler.stop')
  const file = join(profDir, 'bench.cpuprofile')
  writeFileSync(file, JSON.stringify(p))
  console.log(`bench process profile: ${file}\n${summarise(p as never, 30)}`)
}
const ok = t.ops
const s = shares(t.extra ?? {})
const per = (k: number) => (k / ok).toFixed(2)
console.log(`${where}, ${clients} clients, ${seconds} s: ${((ok * 1000) / t.ms).toFixed(0)} successes/s; to hold p50 ${quantile(t.lat, 0.5).toFixed(2)} ms, p99 ${quantile(t.lat, 0.99).toFixed(2)} ms; shares ${s.min.toFixed(2)}-${s.max.toFixed(2)}`)
if (process.env.TAIL) console.log(`to hold: ${[0.5, 0.9, 0.95, 0.99, 0.999, 1].map((q) => `q${q} ${quantile(t.lat, q).toFixed(2)}`).join(', ')} ms`)
console.log(`calls per success: ${[...calls].map(([k, v]) => `${k} ${per(v)}`).join(', ')}`)
console.log(`CPU per success: this process ${((cpu.user + cpu.system) / 1000 / ok).toFixed(3)} ms${server ? `, node ${(nodeCpu / ok).toFixed(3)} ms` : ''}`)
await Promise.all(peers.map((p) => p.close()))
await server?.stop()
await redisServer?.dispose()
await etcdServer?.stop()
if (profile && server) {
  await new Promise((r) => setTimeout(r, 500))
  for (const f of readdirSync(profDir).filter((f) => f.startsWith('CPU'))) {
    console.log(`node profile: ${join(profDir, f)}\n${summarise(JSON.parse(readFileSync(join(profDir, f), 'utf8')), 40)}`)
  }
}
dir.remove()
process.exit(0)
