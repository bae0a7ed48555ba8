/**
 * Real etcd members for tests: one member, or a cluster of three, on free
 * loopback ports with temporary data directories (in memory where there is
 * room: ../setup/store-dir.ts). A member can be stopped,
 * killed (`kill -9`), paused (`SIGSTOP`), resumed and started again on the
 * same ports and data. `ZARIS_ETCD` names the etcd binary (default `etcd` on PATH).
 */
import type { ChildProcess } from 'node:child_process'
import { spawnWatched } from '../setup/watched'
import { rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { storeDir } from '../setup/store-dir'

export const ETCD_BINARY = process.env.ZARIS_ETCD ?? 'etcd'

export interface Timing {
  /** etcd's --heartbeat-interval (ms). */
  heartbeat: number
  /** etcd's --election-timeout (ms); the minimum lease is 1.5 of it, rounded up to a second. */
  election: number
}

/** Fast timing for one member: the minimum lease is 1 s. */
export const FAST: Timing = { heartbeat: 50, election: 500 }
/** etcd's defaults (minimum lease 2 s): what a cluster runs with unless tuned. */
export const DEFAULT_TIMING: Timing = { heartbeat: 100, election: 1_000 }

/** TLS for the client port: PEM files of the server's certificate and key. */
export interface MemberTls {
  certFile: string
  keyFile: string
}

export class EtcdMember {
  readonly name: string
  readonly dir: string
  clientPort = 0
  peerPort = 0
  /** Plain-HTTP /health when the client port speaks TLS. */
  metricsPort = 0
  tls: MemberTls | undefined
  initialCluster = ''
  /** The same for every member of one cluster. */
  clusterToken = `zaris-test-${Math.random().toString(36).slice(2, 10)}`
  readonly timing: Timing
  #process: ChildProcess | undefined
  #paused = false
  log = ''

  constructor(name: string, timing: Timing) {
    this.name = name
    this.timing = timing
    this.dir = storeDir(`zaris-etcd-${name}-`)
  }

  get endpoint(): string {
    return `127.0.0.1:${this.clientPort}`
  }

  get pid(): number | undefined {
    return this.#process?.pid
  }

  get running(): boolean {
    return this.#process !== undefined
  }

  async ports(): Promise<void> {
    if (this.clientPort === 0) this.clientPort = await freePort()
    if (this.peerPort === 0) this.peerPort = await freePort()
    if (this.metricsPort === 0) this.metricsPort = await freePort()
  }

  /** Starts the member (again, on its data, after a stop or kill). Resolves when it is up; `waitHealthy` also waits for a leader. */
  async start(waitHealthy = true): Promise<this> {
    if (this.#process) throw new Error(`etcd ${this.name} is already running`)
    await this.ports()
    const peer = `http://127.0.0.1:${this.peerPort}`
    const client = `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.clientPort}`
    const args = [
      '--name', this.name, '--data-dir', join(this.dir, 'data'),
      '--listen-client-urls', client, '--advertise-client-urls', client,
      '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
      '--initial-cluster', this.initialCluster || `${this.name}=${peer}`,
      '--initial-cluster-token', this.clusterToken,
      '--heartbeat-interval', String(this.timing.heartbeat), '--election-timeout', String(this.timing.election),
      '--logger', 'zap', '--log-level', 'error',
      '--listen-metrics-urls', `http://127.0.0.1:${this.metricsPort}`,
      ...(this.tls ? ['--cert-file', this.tls.certFile, '--key-file', this.tls.keyFile] : []),
    ]
    const child = spawnWatched(ETCD_BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] }, this.dir)
    this.log = ''
    child.stdout!.on('data', (d: Buffer) => (this.log = (this.log + d.toString()).slice(-20_000)))
    child.stderr!.on('data', (d: Buffer) => (this.log = (this.log + d.toString()).slice(-20_000)))
    const exited = new Promise<never>((_, reject) => {
      child.once('error', reject)
      child.once('exit', (code) => reject(new Error(`etcd ${this.name} exited with ${code} before it was ready:\n${this.log}`)))
    })
    exited.catch(() => {})
    this.#process = child
    this.#paused = false
    child.once('exit', () => {
      if (this.#process === child) this.#process = undefined
    })
    if (waitHealthy) {
      try {
        await Promise.race([exited, this.healthy()])
      } catch (err) {
        await this.kill()
        throw err
      }
    }
    return this
  }

  /** Resolves once the member answers /health with a leader. */
  async healthy(timeout = 20_000): Promise<void> {
    const deadline = Date.now() + timeout
    while (Date.now() < deadline) {
      // Exited (a port taken before it bound it, say): its log says why, now rather than at the deadline.
      if (!this.#process) break
      const ok = await fetch(`http://127.0.0.1:${this.metricsPort}/health`, { signal: AbortSignal.timeout(1_000) })
        .then(async (r) => ((await r.json()) as { health?: string }).health === 'true')
        .catch(() => false)
      if (ok) return
      await new Promise((r) => setTimeout(r, 50))
    }
    throw new Error(`etcd ${this.name} on ${this.endpoint} ${this.#process ? `was not healthy within ${timeout} ms` : 'exited'}:\n${this.log}`)
  }

  /** This member's id and the id of the leader it knows, from the gRPC gateway. */
  async status(): Promise<{ member: string; leader: string }> {
    const r = await fetch(`http://${this.endpoint}/v3/maintenance/status`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(1_000) })
    const s = (await r.json()) as { header: { member_id: string }; leader: string }
    return { member: s.header.member_id, leader: s.leader }
  }

  async stop(): Promise<void> {
    await this.#signal('SIGTERM')
  }

  /** kill -9. */
  async kill(): Promise<void> {
    await this.#signal('SIGKILL')
  }

  /** SIGSTOP: the member holds its sockets open and answers nothing. */
  pause(): void {
    if (!this.#process || this.#paused) return
    this.#process.kill('SIGSTOP')
    this.#paused = true
  }

  resume(): void {
    if (!this.#process || !this.#paused) return
    this.#process.kill('SIGCONT')
    this.#paused = false
  }

  async dispose(): Promise<void> {
    await this.kill()
    rmSync(this.dir, { recursive: true, force: true })
  }

  async #signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.#process
    if (!child) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    if (this.#paused) child.kill('SIGCONT')
    child.kill(signal)
    await exited
    this.#process = undefined
    this.#paused = false
  }
}

/** One member or several, started together. */
export class EtcdCluster {
  readonly members: EtcdMember[]

  private constructor(members: EtcdMember[]) {
    this.members = members
  }

  static async start(size = 1, timing: Timing = size === 1 ? FAST : DEFAULT_TIMING): Promise<EtcdCluster> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await EtcdCluster.#startOnce(size, timing)
      } catch (err) {
        // A port found free was taken by another test's process before etcd bound it: again, on other ports.
        if (attempt >= 3 || !/address already in use/.test((err as Error).message)) throw err
      }
    }
  }

  static async #startOnce(size: number, timing: Timing): Promise<EtcdCluster> {
    const members = Array.from({ length: size }, (_, i) => new EtcdMember(`m${i}`, timing))
    const cluster = new EtcdCluster(members)
    try {
      await Promise.all(members.map((m) => m.ports()))
      const initial = members.map((m) => `${m.name}=http://127.0.0.1:${m.peerPort}`).join(',')
      for (const m of members) {
        m.initialCluster = initial
        m.clusterToken = members[0]!.clusterToken
      }
      // Members of a new cluster wait for each other: start all, then wait.
      await Promise.all(members.map((m) => m.start(false)))
      await Promise.all(members.map((m) => m.healthy()))
    } catch (err) {
      await cluster.dispose()
      throw err
    }
    return cluster
  }

  /** `etcd://a,b,c/<namespace>` over every member (or the given ones). */
  url(namespace: string, members: EtcdMember[] = this.members): string {
    return `etcd://${members.map((m) => m.endpoint).join(',')}/${namespace}`
  }

  /** The member that leads now (asked of the running members). */
  async leader(): Promise<EtcdMember> {
    const deadline = Date.now() + 20_000
    while (Date.now() < deadline) {
      for (const m of this.members.filter((x) => x.running)) {
        const s = await m.status().catch(() => undefined)
        if (!s || s.leader === '0') continue
        for (const x of this.members.filter((y) => y.running)) {
          const own = await x.status().catch(() => undefined)
          if (own?.member === s.leader) return x
        }
      }
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error('no etcd member leads')
  }

  async dispose(): Promise<void> {
    await Promise.all(this.members.map((m) => m.dispose()))
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}
