/**
 * The servers a bench run starts (zaris nodes, redis-server, etcd), each
 * stopped by its scenario; anything still running when the bench exits (an
 * error, Ctrl-C) is killed here by its pid, so a run never leaves a server
 * behind.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNode, type NodeProcess } from '../../test/server/node-process'
import { startRedis, type RedisServer } from '../../test/redis/server'
import { PostgresServer } from '../../test/postgres/server'

const live = new Set<number>()
const dirs = new Set<string>()

function killAll(): void {
  for (const pid of live) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  live.clear()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  dirs.clear()
}
process.on('exit', killAll)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    killAll()
    process.exit(130)
  })
}

/** A temporary directory, removed when the bench exits (or by `remove`). */
export function tempDir(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix))
  dirs.add(path)
  return {
    path,
    remove() {
      rmSync(path, { recursive: true, force: true })
      dirs.delete(path)
    },
  }
}

/** `zaris serve` as a process of its own (see test/server/node-process.ts). */
export async function node(args: string[] = [], env: Record<string, string> = {}): Promise<NodeProcess> {
  const n = await startNode(args, env)
  const pid = n.proc.pid!
  live.add(pid)
  const stop = n.stop.bind(n)
  n.stop = async () => {
    const code = await stop()
    live.delete(pid)
    return code
  }
  return n
}

/** A redis-server on a free loopback port (see test/redis/server.ts). */
export async function redis(): Promise<RedisServer> {
  const r = await startRedis()
  if (r.pid) live.add(r.pid)
  const pid = r.pid
  const dispose = r.dispose.bind(r)
  r.dispose = async () => {
    await dispose()
    if (pid) live.delete(pid)
  }
  return r
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** An etcd started for the bench: its client URL and how to stop it. */
export interface Etcd {
  url: string
  stop(): Promise<void>
}

/** The etcd binary (Debian `etcd-server`), or `ZARIS_ETCD`. */
export const ETCD = process.env.ZARIS_ETCD ?? 'etcd'

/** Starts a one-member etcd on loopback ports in a temp dir (fsync on, as shipped); rejects if it cannot. */
export async function etcd(): Promise<Etcd> {
  const dir = tempDir('zaris-bench-etcd-')
  const [client, peer] = [await freePort(), await freePort()]
  const url = `http://127.0.0.1:${client}`
  const peerUrl = `http://127.0.0.1:${peer}`
  const child: ChildProcess = spawn(
    ETCD,
    [
      '--name', 'bench',
      '--data-dir', join(dir.path, 'data'),
      '--listen-client-urls', url,
      '--advertise-client-urls', url,
      '--listen-peer-urls', peerUrl,
      '--initial-advertise-peer-urls', peerUrl,
      '--initial-cluster', `bench=${peerUrl}`,
      '--logger', 'zap',
      '--log-outputs', 'stderr',
      '--log-level', 'error',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let log = ''
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (err) => reject(err))
    void exited.then(() => reject(new Error(`etcd exited before it was ready: ${log.trim().slice(0, 300)}`)))
  })
  failed.catch(() => {})
  if (child.pid) live.add(child.pid)
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await exited
    }
    if (child.pid) live.delete(child.pid)
    dir.remove()
  }
  try {
    await Promise.race([failed, healthy(url)])
  } catch (err) {
    await stop()
    throw err
  }
  return { url, stop }
}

async function healthy(url: string): Promise<void> {
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${url}/health`)
      if (res.ok && ((await res.json()) as { health?: string }).health === 'true') return
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error('etcd did not report healthy within 15 s')
}

/** A Postgres on a free loopback port in a temp folder (see test/postgres/server.ts), killed with the bench if still up. */
export async function postgres(): Promise<PostgresServer> {
  const server = new PostgresServer()
  await server.start()
  const pid = server.pid
  if (pid) live.add(pid)
  const dispose = server.dispose.bind(server)
  server.dispose = async () => {
    await dispose()
    if (pid) live.delete(pid)
  }
  return server
}
