/**
 * The prerequisite check: what it finds, what it decides and what it says.
 * Missing programs are simulated with ZARIS_PREREQS_PATH (a PATH for the
 * check alone) and a variable naming nothing, never by removing packages;
 * `--check` stands for a user who cannot install (it never installs).
 */
import { spawn } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { onPath, playwrightChromium } from '../browser-harness/chromium'
import { NEEDS, decide, missing } from './prereqs'

const root = resolve(import.meta.dirname, '../..')
const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

/** A directory holding an executable stub for each name (and links to real programs). */
function binDir(stubs: string[], links: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'zaris-prereqs-'))
  dirs.push(dir)
  for (const name of stubs) {
    writeFileSync(join(dir, name), '#!/bin/sh\nexit 0\n')
    chmodSync(join(dir, name), 0o755)
  }
  for (const [name, target] of Object.entries(links)) symlinkSync(target, join(dir, name))
  return dir
}

const need = (name: string) => NEEDS.find((n) => n.name === name)!
const nonRoot = { canInstall: false, hasApt: true }

describe('finding', () => {
  test('a program on PATH is found, one that is not is missing', () => {
    // postgres: found in /usr/lib/postgresql too (Debian's place for it, off PATH), as on every machine that runs this.
    const env = { PATH: binDir(['redis-server', 'etcd', 'pgbouncer']), ZARIS_CHROMIUM: join(binDir(['chrome']), 'chrome') }
    expect(missing(NEEDS, env).map((n) => n.name)).toEqual(['redis-cli'])
  })

  test('chromium: ZARIS_CHROMIUM wins, else chromium on PATH, else Playwright’s own', () => {
    const own = binDir(['my-chrome'])
    expect(need('chromium').find({ PATH: binDir(['chromium']), ZARIS_CHROMIUM: join(own, 'my-chrome') })).toBe(join(own, 'my-chrome'))
    const path = binDir(['chromium'])
    expect(need('chromium').find({ PATH: path })).toBe(join(path, 'chromium'))
    expect(need('chromium').find({ PATH: binDir([]) })).toBe(playwrightChromium())
  })

  test('postgres: ZARIS_POSTGRES_BIN (a folder) wins; pgbouncer: ZARIS_PGBOUNCER, else PATH, else /usr/sbin; apt packages postgresql and pgbouncer, their services stopped', () => {
    const own = binDir(['postgres', 'initdb'])
    expect(need('postgres').find({ PATH: '', ZARIS_POSTGRES_BIN: own })).toBe(own)
    expect(need('postgres').find({ PATH: '', ZARIS_POSTGRES_BIN: binDir(['initdb']) })).toBeUndefined()
    const path = binDir(['pgbouncer'])
    expect(need('pgbouncer').find({ PATH: path })).toBe(join(path, 'pgbouncer'))
    expect(need('pgbouncer').find({ PATH: path, ZARIS_PGBOUNCER: '/opt/none/pgbouncer' })).toBeUndefined()
    expect(need('pgbouncer').find({ PATH: binDir([]), ZARIS_PGBOUNCER: join(path, 'pgbouncer') })).toBe(join(path, 'pgbouncer'))
    const d = decide([need('postgres'), need('pgbouncer')], {}, { canInstall: true, hasApt: true })
    expect(d).toMatchObject({ kind: 'install', packages: ['postgresql', 'pgbouncer'] })
    expect([need('postgres').services, need('pgbouncer').services]).toEqual([['postgresql'], ['pgbouncer', 'pgbouncer.socket']])
  })

  test('a variable that names no executable counts as missing, even when PATH has the program', () => {
    const env = { PATH: binDir(['redis-server']), ZARIS_REDIS_SERVER: '/nonexistent/redis-server' }
    expect(need('redis-server').find(env)).toBeUndefined()
  })
})

describe('deciding', () => {
  const absent = [need('redis-server'), need('etcd')]

  test('nothing missing: the suite runs', () => {
    expect(decide([], {}, nonRoot)).toEqual({ kind: 'ready' })
  })

  test('root with apt-get installs, saying so in one line', () => {
    const d = decide([need('redis-server'), need('redis-cli'), need('etcd')], {}, { canInstall: true, hasApt: true })
    expect(d).toMatchObject({ kind: 'install', packages: ['redis-server', 'redis-tools', 'etcd-server'] })
    expect(d.kind === 'install' && d.line).toMatch(/^zaris tests: installing redis-server redis-tools etcd-server with apt-get \(missing: redis-server, redis-cli, etcd\)[^\n]*$/)
  })

  test('a user without root gets what is missing and the exact command', () => {
    const d = decide(absent, {}, nonRoot)
    expect(d.kind).toBe('stop')
    const message = d.kind === 'stop' ? d.message : ''
    expect(message).toContain('redis-server (Redis adapter')
    expect(message).toContain('etcd (etcd adapter tests)')
    expect(message).toContain('\n  sudo apt-get install -y redis-server etcd-server\n')
    expect(message).not.toContain('chromium')
  })

  test('root without apt-get is told to use its package manager', () => {
    const d = decide(absent, {}, { canInstall: true, hasApt: false })
    expect(d.kind === 'stop' && d.message).toContain("your system's package manager (on Debian or Ubuntu: sudo apt-get install -y redis-server etcd-server)")
  })

  test('a variable naming nothing stops even root: installing would not change it', () => {
    const d = decide([need('chromium')], { ZARIS_CHROMIUM: '/opt/none' }, { canInstall: true, hasApt: true })
    expect(d.kind).toBe('stop')
    expect(d.kind === 'stop' && d.message).toContain('ZARIS_CHROMIUM is set to "/opt/none", which is not an executable: fix or unset it.')
    expect(d.kind === 'stop' && d.message).not.toContain('apt-get install')
  })
})

/** Runs the check as `npm run prereqs -- --check` does; resolves exit code, output and time taken. */
function runCheck(env: Record<string, string>): Promise<{ code: number | null; output: string; ms: number }> {
  const started = performance.now()
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/setup/prereqs.ts', '--check'], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    child.once('exit', (code) => done({ code, output, ms: performance.now() - started }))
  })
}

describe('as a process', () => {
  test('nothing to be found: exit 1 at once with every missing program and the apt-get command', async () => {
    const aptGet = onPath('apt-get', process.env.PATH)
    const env: Record<string, string> = { ZARIS_PREREQS_PATH: binDir([], aptGet ? { 'apt-get': aptGet } : {}), PLAYWRIGHT_BROWSERS_PATH: binDir([]) }
    for (const n of NEEDS) env[n.env] = ''
    const r = await runCheck(env)
    expect(r.code).toBe(1)
    expect(r.output).toContain('npm test needs programs that are not on this machine: chromium (browser and tab tests), redis-server')
    expect(r.output).toContain(aptGet ? 'sudo apt-get install -y chromium redis-server redis-tools etcd-server' : "your system's package manager")
    // The bound (stop within 10 s, never a hook time-out); the run takes about a second.
    expect(r.ms).toBeLessThan(10_000)
  }, 20_000)

  test('everything on this machine: exit 0, nothing said', async () => {
    const r = await runCheck({})
    expect(r).toMatchObject({ code: 0, output: '' })
  }, 20_000)
})
