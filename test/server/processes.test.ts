/**
 * The node and its clients as real OS processes: the two-terminal tutorial,
 * kill -9 of a lock holder, kill -9 of a --data node (durability, tokens,
 * TTLs after the restart), and the CLI's start, refusals and clean stop.
 */
import { spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { connect, type Client } from 'zaris'
import { storeDir } from '../setup/store-dir'
import { root, runServe, startNode, type NodeProcess } from './node-process'

const dir = storeDir('zaris-proc-')
const nodes: NodeProcess[] = []
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.kill9()))
  rmSync(dir, { recursive: true, force: true })
})

async function node(args: string[] = []): Promise<NodeProcess> {
  const n = await startNode(args)
  nodes.push(n)
  return n
}

/** Runs a TypeScript program as its own process; resolves its exit code and stdout. */
function runTs(file: string, args: string[]): { done: Promise<{ code: number | null; stdout: string }>; proc: ReturnType<typeof spawn>; stdout: () => string } {
  const proc = spawn(process.execPath, ['--import', 'tsx', file, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  proc.stdout!.on('data', (d) => (stdout += d))
  proc.stderr!.on('data', (d) => (stderr += d))
  const done = new Promise<{ code: number | null; stdout: string }>((resolve) =>
    proc.once('exit', (code) => resolve({ code, stdout: stdout + (stderr ? `\n[stderr] ${stderr}` : '') })),
  )
  return { done, proc, stdout: () => stdout }
}

function waitForLine(get: () => string, pattern: RegExp, timeout = 20_000): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeout
  return new Promise((resolve, reject) => {
    const tick = () => {
      const m = pattern.exec(get())
      if (m) return resolve(m)
      if (Date.now() > deadline) return reject(new Error(`no line matching ${pattern} within ${timeout} ms; got:\n${get()}`))
      setTimeout(tick, 10)
    }
    tick()
  })
}

describe('the tutorial across processes', () => {
  test('two nightly-report processes at once: exactly one runs the job', async () => {
    const n = await node()
    const url = `zaris://127.0.0.1:${n.port}/demo`
    const [a, b] = [runTs('examples/nightly-report.ts', [url]), runTs('examples/nightly-report.ts', [url])]
    const results = await Promise.all([a.done, b.done])
    const outputs = results.map((r) => r.stdout.trim())
    expect(results.map((r) => r.code)).toEqual([0, 0])
    const winners = outputs.filter((o) => o.startsWith('Lock acquired. Running the job...'))
    const skippers = outputs.filter((o) => o === 'Another instance holds the lock. Skipping.')
    expect({ winners: winners.length, skippers: skippers.length }).toEqual({ winners: 1, skippers: 1 })
    expect(winners[0]).toContain('Job complete. Lock will be released.')
    const client = await connect(url)
    expect((await client.get('report:status'))?.value).toBe('done')
    expect(await client.locks.holder('lock:nightly-report')).toBeUndefined()
    await client.close()
  }, 60_000)
})

describe('kill -9', () => {
  test('of a process holding a lock: another acquires it after the TTL, and not before', async () => {
    const n = await node()
    const url = `zaris://127.0.0.1:${n.port}/crash`
    const ttl = 2_000
    const holder = runTs('test/server/fixtures/hold-lock.ts', [url, 'lock:crash', String(ttl)])
    const [, token] = await waitForLine(holder.stdout, /held (\d+)/)
    holder.proc.kill('SIGKILL')
    await holder.done
    const client = await connect(url)
    // The store's clock says when the lock frees: no earlier than `before + ttl`.
    const before = performance.now()
    const held = await client.locks.holder('lock:crash')
    expect(held?.token).toBe(Number(token))
    const freeNoEarlierThan = before + held!.ttl!
    expect(await client.locks.acquire('lock:crash')).toBeNull()
    const lock = await client.locks.acquire('lock:crash', { wait: 10_000 })
    const at = performance.now()
    expect(lock).not.toBeNull()
    expect(at).toBeGreaterThanOrEqual(freeNoEarlierThan - 1)
    expect(lock!.token).toBeGreaterThan(Number(token))
    console.log(`[figure] lock of a killed holder taken over ${(at - freeNoEarlierThan).toFixed(0)} ms after its TTL ran out on the node`)
    expect(at - freeNoEarlierThan).toBeLessThan(1_500)
    await client.close()
  }, 30_000)

  test('of a --data node: after a restart every acknowledged write is there and tokens keep growing', async () => {
    const file = join(dir, 'crash.db')
    const n1 = await node(['--data', file])
    const url1 = `zaris://127.0.0.1:${n1.port}/durable`
    const acked = new Map<string, { value: number; revision: number }>()
    let maxSeen = 0
    const clients: Client[] = []
    let stop = false
    const workers = Array.from({ length: 6 }, async (_, w) => {
      const c = await connect(url1, { id: `worker-${w}` })
      clients.push(c)
      for (let i = 0; !stop; i++) {
        try {
          if (i % 3 === 0) {
            const lock = await c.locks.acquire(`lock:${w % 2}`, { ttl: 60_000, autoRenew: false })
            if (lock) {
              maxSeen = Math.max(maxSeen, lock.token)
              await lock.release()
            }
          } else {
            const e = await c.put(`w${w}:${i}`, i)
            acked.set(e.key, { value: i, revision: e.revision })
            maxSeen = Math.max(maxSeen, e.revision)
          }
        } catch {
          return // the node is gone
        }
      }
    })
    await new Promise((r) => setTimeout(r, 800))
    await n1.kill9() // mid-flight
    stop = true
    await Promise.all(workers)
    await Promise.all(clients.map((c) => c.close().catch(() => {})))
    expect(acked.size).toBeGreaterThan(20)

    const n2 = await node(['--data', file])
    const client = await connect(`zaris://127.0.0.1:${n2.port}/durable`)
    const all = new Map((await client.list('w')).map((e) => [e.key, e]))
    const missing = [...acked].filter(([key, { value, revision }]) => all.get(key)?.value !== value || all.get(key)?.revision !== revision)
    expect(missing).toEqual([])
    const lock = await client.locks.acquire('lock:after-restart')
    expect(lock!.token).toBeGreaterThan(maxSeen)
    console.log(`[figure] ${acked.size} acknowledged writes before kill -9, all present after restart; first new token ${lock!.token} > ${maxSeen}`)
    await client.close()
    await n2.stop()
  }, 60_000)

  test('of a --data node: a lock keeps its whole TTL from the restart, however long the node was down', async () => {
    const file = join(dir, 'ttl.db')
    const n1 = await node(['--data', file])
    const url1 = `zaris://127.0.0.1:${n1.port}/ttl`
    const a = await connect(url1, { id: 'holder' })
    const ttl = 3_000
    const lock = await a.locks.acquire('lock:ttl', { ttl, autoRenew: false })
    expect(lock).not.toBeNull()
    await n1.kill9()
    await a.close().catch(() => {})
    // Down for longer than the TTL.
    await new Promise((r) => setTimeout(r, ttl + 500))
    const restarted = performance.now()
    const n2 = await node(['--data', file])
    const b = await connect(`zaris://127.0.0.1:${n2.port}/ttl`, { id: 'other' })
    const held = await b.locks.holder('lock:ttl')
    expect(held).toMatchObject({ owner: 'holder', token: lock!.token })
    expect(held!.ttl!).toBeGreaterThan(ttl - (performance.now() - restarted) - 1)
    expect(await b.locks.acquire('lock:ttl')).toBeNull()
    const next = await b.locks.acquire('lock:ttl', { wait: 10_000 })
    expect(performance.now() - restarted).toBeGreaterThanOrEqual(ttl)
    expect(next!.token).toBeGreaterThan(lock!.token)
    await b.close()
    await n2.stop()
  }, 30_000)
})

describe('zaris serve', () => {
  test('refuses a non-loopback address without a token, unless --insecure', async () => {
    const refused = await runServe(['--host', '0.0.0.0', '--port', '0'])
    expect(refused.code).toBe(2)
    expect(refused.output).toMatch(/refusing to listen on 0\.0\.0\.0 without --token/)
    const insecure = await node(['--host', '0.0.0.0', '--insecure'])
    expect(insecure.output()).toMatch(/listening on http:\/\/0\.0\.0\.0:\d+ \(store: memory; no token/)
    expect(await insecure.stop()).toBe(0)
    const withToken = await node(['--host', '0.0.0.0', '--token', 'a-long-enough-token'])
    expect(withToken.output()).toMatch(/bearer token/)
    expect(withToken.output()).not.toContain('a-long-enough-token')
    expect(await withToken.stop()).toBe(0)
  }, 60_000)

  test('rejects bad options with usage, exit code 2', async () => {
    for (const args of [['--cors', '*'], ['--port', 'abc'], ['--frobnicate'], ['--token', 'short']]) {
      const r = await runServe(args)
      expect({ args, code: r.code }).toEqual({ args, code: 2 })
      expect(r.output).toMatch(/usage: zaris serve/)
    }
  }, 60_000)

  test('a busy port is reported, exit code 1', async () => {
    const n = await node()
    const r = await runServe(['--port', String(n.port)])
    expect(r.code).toBe(1)
    expect(r.output).toMatch(/address is in use/)
  }, 30_000)

  test('stops cleanly on SIGINT and SIGTERM, ending open watches', async () => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const n = await startNode()
      const client = await connect(`zaris://127.0.0.1:${n.port}/stop`)
      const watch = client.watch('k')
      await watch.ready
      const exited = new Promise<number | null>((resolve) => n.proc.once('exit', resolve))
      n.proc.kill(signal)
      expect(await exited).toBe(0)
      expect(n.output()).toContain(`zaris node stopping (${signal})`)
      await client.close()
    }
  }, 30_000)
})
