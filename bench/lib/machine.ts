/**
 * The machine and the versions a run measured, for bench/RESULTS.md.
 *
 * @module
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus, loadavg, release, totalmem, type } from 'node:os'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))

export function machine(): { cpu: string; cores: number; memoryGiB: number; os: string; load: string } {
  const list = cpus()
  return {
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${type()} ${release()}`,
    load: loadavg().map((l) => l.toFixed(2)).join(' '),
  }
}

function pkg(name: string): string {
  try {
    return (JSON.parse(readFileSync(`${root}node_modules/${name}/package.json`, 'utf8')) as { version: string }).version
  } catch {
    return 'missing'
  }
}

function tool(command: string, args: string[], pattern: RegExp): string {
  try {
    const out = execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 5_000 })
    return pattern.exec(out)?.[1] ?? out.trim().split('\n')[0]!
  } catch {
    return 'missing'
  }
}

export function versions(): Record<string, string> {
  const own = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { version: string }
  let commit = ''
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    commit = 'unknown'
  }
  return {
    zaris: `${own.version} (${commit})`,
    node: process.versions.node,
    chromium: tool(process.env.ZARIS_CHROMIUM ?? '/usr/bin/chromium', ['--version'], /([\d.]+)/),
    'redis-server': tool(process.env.ZARIS_REDIS_SERVER ?? 'redis-server', ['--version'], /v=([\d.]+)/),
    etcd: tool(process.env.ZARIS_ETCD ?? 'etcd', ['--version'], /etcd Version: ([\d.]+)/),
    sqlite: sqliteVersion(),
    'async-mutex': pkg('async-mutex'),
    redlock: pkg('redlock'),
    'broadcast-channel': pkg('broadcast-channel'),
    etcd3: pkg('etcd3'),
    ioredis: pkg('ioredis'),
    'better-sqlite3': pkg('better-sqlite3'),
    playwright: pkg('playwright'),
  }
}

function sqliteVersion(): string {
  try {
    return execFileSync(process.execPath, ['-e', "const D=require('better-sqlite3');console.log(new D(':memory:').prepare('select sqlite_version() v').get().v)"], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim()
  } catch {
    return 'missing'
  }
}
