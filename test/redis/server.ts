/**
 * Starts a real `redis-server` for a test: a free loopback port, a temporary
 * directory, no persistence by default (`--save '' --appendonly no`), or an
 * append-only file fsynced on every write (`durable: true`). Stop it with
 * `stop()`; `kill()` is a `kill -9`; `start()` again on the same port and
 * directory is a restart.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { spawnWatched } from '../setup/watched'
import { mkdtempSync, rmSync } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const REDIS_SERVER = process.env.ZARIS_REDIS_SERVER ?? 'redis-server'

export interface RedisServerOptions {
  /** `--appendonly yes --appendfsync always`: every acknowledged write is on disk. */
  durable?: boolean
  /** More `redis-server` arguments, for example `['--requirepass', 'secret']`. */
  args?: string[]
}

export class RedisServer {
  readonly dir: string
  readonly options: RedisServerOptions
  port = 0
  #process: ChildProcess | undefined
  #log = ''

  constructor(options: RedisServerOptions = {}) {
    this.options = options
    this.dir = mkdtempSync(join(tmpdir(), 'zaris-redis-'))
  }

  /** `redis://127.0.0.1:<port>/<db>?ns=<namespace>` */
  url(namespace: string, db = 0): string {
    return `redis://127.0.0.1:${this.port}/${db}?ns=${namespace}`
  }

  get pid(): number | undefined {
    return this.#process?.pid
  }

  async start(): Promise<this> {
    if (this.port !== 0) return this.#start()
    // A free port is free when asked, not always when the server binds it (or its cluster bus, the port + 10 000):
    // another test's process may take it between. A port the test chose itself is tried again with another.
    for (let attempt = 1; ; attempt++) {
      this.port = await freePort()
      try {
        return await this.#start()
      } catch (err) {
        if (attempt === 3 || !/Failed listening|Address already in use/.test(String((err as Error).message))) throw err
        this.port = 0
      }
    }
  }

  async #start(): Promise<this> {
    if (this.#process) throw new Error('redis-server is already running')
    const persistence = this.options.durable ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', ...persistence, '--daemonize', 'no', ...(this.options.args ?? [])]
    const child = spawnWatched(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] }, this.dir)
    this.#log = ''
    child.stdout!.on('data', (d: Buffer) => (this.#log += d.toString()))
    child.stderr!.on('data', (d: Buffer) => (this.#log += d.toString()))
    const exited = new Promise<never>((_, reject) => {
      child.once('error', reject)
      child.once('exit', (code) => reject(new Error(`redis-server exited with ${code} before it was ready:\n${this.#log}`)))
    })
    exited.catch(() => {})
    this.#process = child
    child.once('exit', () => {
      if (this.#process === child) this.#process = undefined
    })
    try {
      await Promise.race([exited, this.#ready()])
    } catch (err) {
      await this.kill()
      throw err
    }
    return this
  }

  /** SIGTERM, and wait for the process to exit. */
  async stop(): Promise<void> {
    await this.#signal('SIGTERM')
  }

  /** kill -9: no chance to flush anything that was not already on disk. */
  async kill(): Promise<void> {
    await this.#signal('SIGKILL')
  }

  /** Stops the server if it runs and removes its directory. */
  async dispose(): Promise<void> {
    await this.stop()
    rmSync(this.dir, { recursive: true, force: true })
  }

  async #signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.#process
    if (!child) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.kill(signal)
    await exited
    this.#process = undefined
  }

  /** Polls with PING until the server answers PONG, or asks for a password (not LOADING). */
  async #ready(): Promise<void> {
    const deadline = Date.now() + 10_000
    while (Date.now() < deadline) {
      const answer = await ping(this.port).catch(() => '')
      if (answer === '+PONG' || answer.startsWith('-NOAUTH')) return
      await new Promise((r) => setTimeout(r, 20))
    }
    throw new Error(`redis-server on port ${this.port} did not answer within 10 s:\n${this.#log}`)
  }
}

/** Starts a server; the caller disposes of it. */
export async function startRedis(options?: RedisServerOptions): Promise<RedisServer> {
  return new RedisServer(options).start()
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

function ping(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    let data = ''
    socket.setTimeout(1_000, () => socket.destroy(new Error('timeout')))
    socket.once('error', reject)
    socket.once('connect', () => socket.write('PING\r\n'))
    socket.on('data', (d) => {
      data += d.toString()
      if (data.includes('\r\n')) {
        socket.destroy()
        resolve(data.split('\r\n')[0]!)
      }
    })
  })
}

/** A Redis Cluster of `size` masters (no replicas) on free loopback ports. */
export class RedisCluster {
  readonly nodes: RedisServer[]

  private constructor(nodes: RedisServer[]) {
    this.nodes = nodes
  }

  static async start(size = 3): Promise<RedisCluster> {
    const nodes = Array.from({ length: size }, () => new RedisServer({ args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000'] }))
    const cluster = new RedisCluster(nodes)
    try {
      await Promise.all(nodes.map((n) => n.start()))
      const addresses = nodes.map((n) => `127.0.0.1:${n.port}`)
      await run(REDIS_CLI, ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'])
      // Every node must agree that all slots are served before the cluster takes commands.
      const deadline = Date.now() + 20_000
      for (const node of nodes) {
        while (!(await run(REDIS_CLI, ['-p', String(node.port), 'cluster', 'info'])).includes('cluster_state:ok')) {
          if (Date.now() > deadline) throw new Error('the Redis Cluster did not reach cluster_state:ok within 20 s')
          await new Promise((r) => setTimeout(r, 100))
        }
      }
    } catch (err) {
      await cluster.dispose()
      throw err
    }
    return cluster
  }

  get startupNodes(): Array<{ host: string; port: number }> {
    return this.nodes.map((n) => ({ host: '127.0.0.1', port: n.port }))
  }

  async dispose(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.dispose()))
  }
}

export const REDIS_CLI = process.env.ZARIS_REDIS_CLI ?? 'redis-cli'

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${out}`))))
  })
}

/** How many times Redis has run `command` (its own statistics, `INFO commandstats`), a script's calls included. */
export async function commandCalls(redis: { info(section: string): Promise<string> }, command: string): Promise<number> {
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await redis.info('commandstats'))?.[1] ?? 0)
}
