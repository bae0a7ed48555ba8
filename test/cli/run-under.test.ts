/**
 * `zaris lock|elect|semaphore NAME -- cmd` and `zaris put --fence-token`,
 * run as processes the way a user types them, on a `file://` store (and one
 * run against a node, to show they work on any store). What the commands
 * ran is judged from what they wrote: start and end lines with the token,
 * in a file of the test's.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { connect, type Client } from 'zaris'
import { startNode } from '../server/node-process'
import { storeDir } from '../setup/store-dir'
import { start, zaris } from './run'

const dir = storeDir('zaris-cli-run-')
const clients: Client[] = []
afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()))
  rmSync(dir, { recursive: true, force: true })
})

let n = 0
/** A fresh namespace of the file store: its URL as ZARIS_URL, and a client of the test's on it. */
async function fresh(): Promise<{ url: string; env: Record<string, string>; client: Client }> {
  const url = `file://${join(dir, 'store.db')}?ns=run-${++n}`
  const client = await connect(url)
  clients.push(client)
  return { url, env: { ZARIS_URL: url }, client }
}

/** A shell command that logs `start <token>` and `end <token>` around `body` into `log`. */
const logged = (log: string, body = 'sleep 0.3') => `echo "start $ZARIS_LOCK_TOKEN $(date +%s%N)" >> ${log}; ${body}; echo "end $ZARIS_LOCK_TOKEN $(date +%s%N)" >> ${log}`

/** The [start, end] windows of a log, by token. */
function windows(log: string): Array<{ token: number; start: number; end: number }> {
  const lines = readFileSync(log, 'utf8').trim().split('\n').map((l) => l.split(' '))
  const starts = new Map(lines.filter((l) => l[0] === 'start').map((l) => [l[1]!, Number(l[2]) / 1e6]))
  return lines.filter((l) => l[0] === 'end').map((l) => ({ token: Number(l[1]), start: starts.get(l[1]!)!, end: Number(l[2]) / 1e6 }))
}

describe('zaris lock', () => {
  test('runs the command with the lock: ZARIS_LOCK_TOKEN is the token, the command\'s exit code is zaris\'s, the lock is free after', async () => {
    const { env, url, client } = await fresh()
    const ran = await zaris(['lock', 'job', '--', 'sh', '-c', 'echo "$ZARIS_LOCK_KEY $ZARIS_LOCK_TOKEN $ZARIS_URL"; exit 3'], env)
    expect(ran.code).toBe(3)
    const [key, token, seenUrl] = ran.stdout.trim().split(' ')
    expect([key, seenUrl]).toEqual(['job', url])
    expect(Number(token)).toBeGreaterThan(0)
    expect(await client.locks.holder('job')).toBeUndefined()
    // The next holder's token is larger: the command's was the lock's.
    const next = (await client.locks.acquire('job'))!
    expect(next.token).toBeGreaterThan(Number(token))
    await next.release()
  })

  test('two at once: with --wait one runs after the other; without, one exits 75 and never runs', async () => {
    const { env } = await fresh()
    const log = join(dir, `together-${n}.log`)
    writeFileSync(log, '')
    const both = await Promise.all([0, 1].map(() => zaris(['lock', 'job', '--wait', '15000', '--', 'sh', '-c', logged(log)], env)))
    expect(both.map((r) => r.code)).toEqual([0, 0])
    const [a, b] = windows(log).sort((x, y) => x.start - y.start)
    expect(b!.start).toBeGreaterThanOrEqual(a!.end)
    expect(b!.token).toBeGreaterThan(a!.token)

    writeFileSync(log, '')
    const tries = await Promise.all([0, 1].map(() => zaris(['lock', 'job', '--', 'sh', '-c', logged(log, 'sleep 1')], env)))
    expect(tries.map((r) => r.code).sort()).toEqual([0, 75])
    expect(tries.find((r) => r.code === 75)!.stderr).toMatch(/zaris: the lock job is held by \S+ \(token \d+\); not running the command/)
    expect(windows(log)).toHaveLength(1)
  }, 40_000)

  test('a command whose lock is stolen is stopped: SIGTERM, then SIGKILL after the grace; zaris exits 70 and says why', async () => {
    const { env, client } = await fresh()
    const polite = start(['lock', 'job', '--', 'sh', '-c', 'echo running; exec sleep 30'], env)
    await polite.waitFor(/running/)
    const held = (await client.locks.holder('job'))!
    await client.delete('job', { fence: { key: 'job', token: held.token } }) // zaris release --force, in short
    expect(await polite.stop('SIGCONT')).toBe(70) // (SIGCONT: a no-op signal; it waits for the exit)
    expect(polite.stderr()).toMatch(/zaris: lost the lock job \((STOLEN|EXPIRED|LOST)\).*stopping the command/)

    const stubborn = start(['lock', 'job', '--grace', '400', '--', 'sh', '-c', 'trap "" TERM; echo running; while :; do sleep 0.1; done'], env)
    await stubborn.waitFor(/running/)
    const again = (await client.locks.holder('job'))!
    const stolenAt = performance.now()
    await client.delete('job', { fence: { key: 'job', token: again.token } })
    expect(await stubborn.stop('SIGCONT')).toBe(70)
    expect(performance.now() - stolenAt).toBeGreaterThanOrEqual(400)
  }, 40_000)

  test('SIGTERM to zaris goes to the command; zaris waits for it, releases, and exits with its code', async () => {
    const { env, client } = await fresh()
    const run = start(['lock', 'job', '--', 'sh', '-c', 'trap "echo got TERM; exit 7" TERM; echo running; while :; do sleep 0.1; done'], env)
    await run.waitFor(/running/)
    expect(await run.stop('SIGTERM')).toBe(7)
    expect(run.stdout()).toMatch(/got TERM/)
    expect(await client.locks.holder('job')).toBeUndefined()
  })

  test('a SIGTERM that comes as the command starts (the command sends it to zaris first thing) still goes to the command', async () => {
    const { env, client } = await fresh()
    const ran = await zaris(['lock', 'job', '--', 'sh', '-c', 'trap "echo got TERM; exit 7" TERM; kill -TERM $PPID; while :; do sleep 0.05; done'], env)
    expect(ran).toMatchObject({ code: 7, stdout: expect.stringMatching(/got TERM/) })
    expect(await client.locks.holder('job')).toBeUndefined()
  })

  test('a command that cannot start: 127, and the lock is released', async () => {
    const { env, client } = await fresh()
    const ran = await zaris(['lock', 'job', '--', 'no-such-command-zaris'], env)
    expect(ran.code).toBe(127)
    expect(ran.stderr).toMatch(/cannot run "no-such-command-zaris": command not found/)
    expect(await client.locks.holder('job')).toBeUndefined()
  })

  test('usage: a command is required after --; --ttl and --wait are whole numbers', async () => {
    const { env } = await fresh()
    expect(await zaris(['lock', 'job'], env)).toMatchObject({ code: 2, stderr: expect.stringMatching(/lock runs a command: put it after --/) })
    expect(await zaris(['lock', 'job', '--ttl', 'soon', '--', 'true'], env)).toMatchObject({ code: 2, stderr: expect.stringMatching(/--ttl must be a whole number/) })
    expect(await zaris(['semaphore', 'job', '--', 'true'], env)).toMatchObject({ code: 2, stderr: expect.stringMatching(/semaphore needs --limit N/) })
    expect(await zaris(['get', 'job', '--', 'true'], env)).toMatchObject({ code: 2, stderr: expect.stringMatching(/get runs no command|at most 1 argument/) })
  })
})

describe('zaris put --fence-token', () => {
  test('writes under the lock its command holds; with a token no longer held it is refused and writes nothing', async () => {
    const { env, client } = await fresh()
    const ran = await zaris(['lock', 'job', '--', 'sh', '-c', `"${process.execPath}" "$ZARIS_CLI" put out 5 --fence-token "$ZARIS_LOCK_TOKEN" && echo "$ZARIS_LOCK_TOKEN"`], { ...env, ZARIS_CLI: (await import('../server/cli-bundle')).cliBundle() })
    expect(ran.code, ran.stderr).toBe(0)
    const token = Number(ran.stdout.trim().split('\n').at(-1))
    expect((await client.get('out'))?.value).toBe(5)
    const stale = await zaris(['put', 'out', '6', '--fence-token', String(token), '--fence-key', 'job'], env)
    expect(stale.code).toBe(1)
    expect(stale.stderr).toMatch(/FENCED/)
    expect((await client.get('out'))?.value).toBe(5)
    expect(await zaris(['put', 'out', '6', '--fence-token', '1'], env)).toMatchObject({ code: 2, stderr: expect.stringMatching(/needs the lock's key/) })
  })
})

describe('zaris elect and zaris semaphore', () => {
  test('elect runs the command while leading; a second candidate with --wait exits 75 meanwhile', async () => {
    const { env } = await fresh()
    const leader = start(['elect', 'sync', '--candidate', 'first', '--', 'sh', '-c', 'echo "leading $ZARIS_LOCK_TOKEN"; exec sleep 30'], env)
    await leader.waitFor(/leading \d+/)
    const second = await zaris(['elect', 'sync', '--wait', '300', '--', 'true'], env)
    expect(second.code).toBe(75)
    expect(second.stderr).toMatch(/not the leader of sync within 300 ms \(first leads, token \d+\)/)
    expect(await leader.stop('SIGTERM')).toBe(143)
  })

  test('semaphore --limit 2: two run at once, a third exits 75', async () => {
    const { env } = await fresh()
    const a = start(['semaphore', 'pool', '--limit', '2', '--', 'sh', '-c', 'echo in; exec sleep 30'], env)
    const b = start(['semaphore', 'pool', '--limit', '2', '--', 'sh', '-c', 'echo in; exec sleep 30'], env)
    await Promise.all([a.waitFor(/in/), b.waitFor(/in/)])
    const third = await zaris(['semaphore', 'pool', '--limit', '2', '--', 'true'], env)
    expect(third.code).toBe(75)
    expect(third.stderr).toMatch(/all 2 permits of pool are taken/)
    await Promise.all([a.stop('SIGTERM'), b.stop('SIGTERM')])
  })
})

test('zaris lock against a node: the same command on another store', async () => {
  const node = await startNode()
  try {
    const ran = await zaris(['lock', 'job', '--url', `zaris://127.0.0.1:${node.port}/run`, '--', 'sh', '-c', 'echo $ZARIS_LOCK_TOKEN'])
    expect(ran.code).toBe(0)
    expect(Number(ran.stdout.trim())).toBeGreaterThan(0)
  } finally {
    await node.stop()
  }
})
