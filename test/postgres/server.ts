/**
 * A real Postgres for tests (Debian's `postgresql`): a cluster made with
 * `initdb` in a temporary folder (in memory where there is room:
 * ../setup/store-dir.ts), started on a free loopback port, and, on request,
 * a real PgBouncer in front of it in transaction mode.
 *
 * Postgres (and PgBouncer) refuse to run as root: when the tests run as root
 * they start both as `nobody` (`setpriv`), the folder given to that user.
 * The binaries are found in `ZARIS_POSTGRES_BIN` (a folder), else the newest
 * `/usr/lib/postgresql/<version>/bin`, else on PATH; `ZARIS_PGBOUNCER` names
 * pgbouncer (default: on PATH, else /usr/sbin).
 *
 * `initdb` runs once per machine and Postgres build (a cached template
 * cluster under tmpdir()); every server copies that cluster.
 * `stop()` is a fast shutdown, `kill()` a `kill -9` of the postmaster and
 * every backend (its process group), `pause()`/`resume()` SIGSTOP/SIGCONT;
 * `start()` again on the same port and folder is a restart on the same data.
 */
import { spawnSync, type ChildProcess } from 'node:child_process'
import { spawnWatched } from '../setup/watched'
import { createHash } from 'node:crypto'
import { chmodSync, chownSync, cpSync, existsSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { storeDir } from '../setup/store-dir'

/** The folder of Postgres's binaries (initdb, postgres), or undefined when none is found. */
export function postgresBin(env: Record<string, string | undefined> = process.env): string | undefined {
  if (env.ZARIS_POSTGRES_BIN) return existsSync(join(env.ZARIS_POSTGRES_BIN, 'postgres')) ? env.ZARIS_POSTGRES_BIN : undefined
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'postgres'))).sort((a, b) => Number(b) - Number(a))
    if (versions[0] !== undefined) return join(root, versions[0], 'bin')
  }
  for (const dir of (env.PATH ?? '').split(':')) if (dir && existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb'))) return dir
  return undefined
}

/**
 * pgbouncer: `ZARIS_PGBOUNCER` (a path, or a name on PATH), else on PATH, else
 * Debian's `/usr/sbin/pgbouncer` (off PATH for users without sbin in it);
 * undefined when none is found.
 */
export function pgbouncerBin(env: Record<string, string | undefined> = process.env): string | undefined {
  const own = env.ZARIS_PGBOUNCER
  const dirs = [...(env.PATH ?? '').split(':').filter(Boolean), ...(own ? [] : ['/usr/sbin'])]
  if (own?.includes('/')) return isFile(own) ? own : undefined
  return dirs.map((dir) => join(dir, own ?? 'pgbouncer')).find(isFile)
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

const isRoot = process.getuid?.() === 0
/** The user the servers run as, when the tests run as root. */
const RUN_AS = { uid: 65534, gid: 65534 }

/** `command args` as the unprivileged user when we are root. */
function asUser(command: string, args: string[]): [string, string[]] {
  return isRoot ? ['setpriv', [`--reuid=${RUN_AS.uid}`, `--regid=${RUN_AS.gid}`, '--clear-groups', command, ...args]] : [command, args]
}

function giveAway(path: string): void {
  if (!isRoot) return
  chownSync(path, RUN_AS.uid, RUN_AS.gid)
}

function giveAwayTree(path: string): void {
  if (!isRoot) return
  spawnSync('chown', ['-R', `${RUN_AS.uid}:${RUN_AS.gid}`, path])
}

let template: string | undefined

/**
 * A cluster made by `initdb` once per machine, user and Postgres build
 * (a second or more under load, and every test file runs in a process of
 * its own), copied by every server. Kept under tmpdir() as a cache, named
 * by `initdb --version` and the binaries' folder; made in a folder of its
 * own and renamed into place, so processes racing to make it never see half
 * of one (the loser's copy is removed).
 */
function clusterTemplate(bin: string): string {
  if (template) return template
  const version = spawnSync(join(bin, 'initdb'), ['--version'], { encoding: 'utf8' }).stdout.trim()
  const key = createHash('sha256').update(`${bin}\n${version}`).digest('hex').slice(0, 12)
  const final = join(tmpdir(), `zaris-pg-template-${process.getuid?.() ?? 0}-${key}`)
  if (!existsSync(join(final, 'ready'))) {
    const dir = mkdtempSync(join(tmpdir(), 'zaris-pg-template-build-'))
    giveAway(dir)
    const [cmd, args] = asUser(join(bin, 'initdb'), ['-D', join(dir, 'data'), '-U', 'zaris', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'])
    const r = spawnSync(cmd, args, { cwd: dir, encoding: 'utf8' })
    if (r.status !== 0) {
      rmSync(dir, { recursive: true, force: true })
      throw new Error(`initdb failed:\n${r.stdout}${r.stderr}`)
    }
    writeFileSync(join(dir, 'ready'), version)
    try {
      renameSync(dir, final)
    } catch {
      // Another process put its template there first (or one half-removed is in the way: it says so below).
      rmSync(dir, { recursive: true, force: true })
    }
    if (!existsSync(join(final, 'ready'))) throw new Error(`no Postgres template cluster at ${final}: remove that folder and run again`)
  }
  template = join(final, 'data')
  return template
}

export interface PostgresOptions {
  /** More `-c name=value` settings. */
  settings?: Record<string, string>
}

export class PostgresServer {
  readonly dir: string
  readonly bin: string
  readonly options: PostgresOptions
  port = 0
  /** The database `url()` names. */
  database = 'postgres'
  log = ''
  #process: ChildProcess | undefined

  constructor(options: PostgresOptions = {}) {
    const bin = postgresBin()
    if (!bin) throw new Error('Postgres is not installed (apt-get install postgresql), or set ZARIS_POSTGRES_BIN to the folder of its binaries')
    this.bin = bin
    this.options = options
    this.dir = storeDir('zaris-pg-')
    cpSync(clusterTemplate(bin), join(this.dir, 'data'), { recursive: true })
    // Postgres refuses a data folder others may read.
    chmodSync(join(this.dir, 'data'), 0o700)
    giveAwayTree(this.dir)
  }

  /** `postgres://zaris@127.0.0.1:<port>/<database>?ns=<namespace>` */
  url(namespace?: string, port = this.port): string {
    return `postgres://zaris@127.0.0.1:${port}/${this.database}${namespace === undefined ? '' : `?ns=${namespace}`}`
  }

  get pid(): number | undefined {
    return this.#process?.pid
  }

  async start(): Promise<this> {
    if (this.#process) throw new Error('postgres is already running')
    if (this.port === 0) this.port = await freePort()
    const settings = {
      listen_addresses: '127.0.0.1',
      max_connections: '200',
      unix_socket_directories: this.dir,
      fsync: 'on',
      // Dynamic shared memory as files in the data folder, not /dev/shm: a server killed with -9
      // (the fault suite's, or a test run's whose watchdog ended it) leaves them there, removed with it.
      dynamic_shared_memory_type: 'mmap',
      ...this.options.settings,
    }
    const args = ['-D', join(this.dir, 'data'), '-p', String(this.port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])]
    const [cmd, full] = asUser(join(this.bin, 'postgres'), args)
    // Its own process group, so kill() reaches every backend as a crash would.
    const child = spawnWatched(cmd, full, { stdio: ['ignore', 'pipe', 'pipe'], cwd: this.dir }, this.dir)
    this.log = ''
    child.stdout!.on('data', (d: Buffer) => (this.log += d.toString()))
    child.stderr!.on('data', (d: Buffer) => (this.log += d.toString()))
    const exited = new Promise<never>((_, reject) => {
      child.once('error', reject)
      child.once('exit', (code) => reject(new Error(`postgres exited with ${code} before it was ready:\n${this.log}`)))
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

  /** Fast shutdown (SIGINT): open sessions are ended, and wait for the exit. */
  async stop(): Promise<void> {
    await this.#signal('SIGINT')
  }

  /** kill -9 of the postmaster and every backend: a crash. */
  async kill(): Promise<void> {
    await this.#signal('SIGKILL', true)
  }

  /** SIGSTOP of every process of the server. */
  pause(): void {
    if (this.#process?.pid) process.kill(-this.#process.pid, 'SIGSTOP')
  }

  resume(): void {
    if (this.#process?.pid) process.kill(-this.#process.pid, 'SIGCONT')
  }

  /** Stops the server if it runs and removes its folder. */
  async dispose(): Promise<void> {
    await this.stop()
    rmSync(this.dir, { recursive: true, force: true })
  }

  async #signal(signal: NodeJS.Signals, group = false): Promise<void> {
    const child = this.#process
    if (!child?.pid) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    try {
      process.kill(group ? -child.pid : child.pid, signal)
    } catch {
      // already gone
    }
    await exited
    if (group) {
      // Backends that outlived their postmaster: gone with the group (a kill -9 reaches them all at once).
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {
        // none left
      }
    }
    this.#process = undefined
  }

  /** Waits until the server accepts connections and answers a query. */
  async #ready(): Promise<void> {
    const deadline = Date.now() + 30_000
    while (Date.now() < deadline) {
      const r = spawnSync(join(this.bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(this.port), '-U', 'zaris', '-d', 'postgres', '-t', '1'], { encoding: 'utf8' })
      if (r.status === 0) return
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    throw new Error(`postgres on port ${this.port} did not accept connections within 30 s:\n${this.log}`)
  }
}

/**
 * Starts a server; the caller disposes of it. When `ZARIS_POSTGRES_SHARED`
 * names the port of a server already running (the mutation runs start one
 * for all their runs: test/mutation/postgres.vitest.config.ts), answers a
 * fresh database of it instead, dropped by `dispose()`.
 */
export async function startPostgres(options?: PostgresOptions): Promise<PostgresServer> {
  const shared = process.env.ZARIS_POSTGRES_SHARED
  if (shared === undefined) return new PostgresServer(options).start()
  const { default: pg } = await import('pg')
  const database = `t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: `postgres://zaris@127.0.0.1:${shared}/postgres` })
    await c.connect()
    try {
      await c.query(sql)
    } finally {
      await c.end()
    }
  }
  await admin(`CREATE DATABASE ${database}`)
  return Object.assign(Object.create(PostgresServer.prototype) as PostgresServer, {
    port: Number(shared),
    database,
    log: '',
    dispose: () => admin(`DROP DATABASE ${database} WITH (FORCE)`),
  })
}

/** A real PgBouncer in transaction mode in front of `server`. */
export class PgBouncer {
  readonly dir: string
  port = 0
  log = ''
  readonly #server: PostgresServer
  /** Server connections per database and user (PgBouncer's default_pool_size). */
  readonly #poolSize: number
  #process: ChildProcess | undefined

  constructor(server: PostgresServer, options: { poolSize?: number } = {}) {
    this.#server = server
    this.#poolSize = options.poolSize ?? 20
    this.dir = storeDir('zaris-pgbouncer-')
    giveAway(this.dir)
  }

  url(namespace?: string): string {
    return this.#server.url(namespace, this.port)
  }

  async start(): Promise<this> {
    if (this.port === 0) this.port = await freePort()
    const ini = join(this.dir, 'pgbouncer.ini')
    writeFileSync(
      ini,
      [
        '[databases]',
        `* = host=127.0.0.1 port=${this.#server.port} user=zaris`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${this.port}`,
        `unix_socket_dir = ${this.dir}`,
        'auth_type = any',
        'pool_mode = transaction',
        `default_pool_size = ${this.#poolSize}`,
        'reserve_pool_size = 0',
        'max_client_conn = 500',
        'server_reset_query =',
        `logfile = ${join(this.dir, 'pgbouncer.log')}`,
      ].join('\n') + '\n',
    )
    giveAway(ini)
    const bin = pgbouncerBin()
    if (!bin) throw new Error('pgbouncer is not installed (apt-get install pgbouncer), or set ZARIS_PGBOUNCER to it')
    const [cmd, args] = asUser(bin, [ini])
    const child = spawnWatched(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout!.on('data', (d: Buffer) => (this.log += d.toString()))
    child.stderr!.on('data', (d: Buffer) => (this.log += d.toString()))
    this.#process = child
    child.once('exit', () => {
      if (this.#process === child) this.#process = undefined
    })
    const deadline = Date.now() + 10_000
    while (!(await accepts(this.port))) {
      if (Date.now() > deadline || !this.#process) throw new Error(`pgbouncer did not listen on ${this.port}:\n${this.log}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    return this
  }

  async dispose(): Promise<void> {
    const child = this.#process
    if (child?.pid) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      process.kill(-child.pid, 'SIGINT')
      await exited
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
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

