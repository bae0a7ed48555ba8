/**
 * A shared holder and a semaphore permit holder killed with kill -9 — a real
 * process, its client talking to a real node process — free their share and
 * permit at their TTL: the test's own clients, waiting meanwhile, get the
 * lock exclusively and the permit between the holder's last renewal plus its
 * TTL and a little after, never before.
 */
import { spawn } from 'node:child_process'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { connect } from 'zaris'
import { root, startNode, type NodeProcess } from '../server/node-process'

let node: NodeProcess
beforeAll(async () => {
  node = await startNode()
})
afterAll(async () => {
  await node?.stop()
})

test('kill -9 of a shared holder and a permit holder: both free at their TTL, not before', async () => {
  const namespace = `kill-${Math.random().toString(36).slice(2)}`
  const ttl = 1_500
  const proc = spawn(process.execPath, ['--import', 'tsx', 'test/http/fixtures/family-holder.ts', node.url, namespace, String(ttl)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  proc.stdout!.on('data', (d) => (out += d))
  proc.stderr!.on('data', (d) => (out += d))
  const exited = new Promise((resolve) => proc.once('exit', resolve))
  try {
    const started = Date.now()
    while (!/held \d+ \d+/.test(out)) {
      if (Date.now() - started > 20_000 || proc.exitCode !== null) throw new Error(`the holder did not start:\n${out}`)
      await new Promise((r) => setTimeout(r, 20))
    }
    const client = await connect(`zaris://127.0.0.1:${node.port}/${namespace}`, { id: 'survivor' })
    // Held, and renewed past its TTL: the process is alive.
    await new Promise((r) => setTimeout(r, ttl + 200))
    expect(await client.locks.acquire('rw')).toBeNull()
    expect(await client.semaphores.acquire('sem', { limit: 1 })).toBeNull()
    expect((await client.locks.query()).held).toMatchObject([{ key: 'rw', mode: 'shared', owner: 'doomed' }])

    proc.kill('SIGKILL')
    await exited
    const killed = performance.now()
    const [lock, permit] = await Promise.all([
      client.locks.acquire('rw', { wait: 10_000 }).then((l) => ({ l, at: performance.now() - killed })),
      client.semaphores.acquire('sem', { limit: 1, wait: 10_000 }).then((p) => ({ p, at: performance.now() - killed })),
    ])
    expect(lock.l?.mode).toBe('exclusive')
    expect(permit.p).not.toBeNull()
    // The last renewal was at most ttl/3 before the kill: the TTL runs out between 2/3 ttl and ttl after it.
    for (const at of [lock.at, permit.at]) {
      expect(at).toBeGreaterThanOrEqual((ttl * 2) / 3 - 100)
      expect(at).toBeLessThan(ttl + 1_500)
    }
    console.log(`freed after kill -9: lock ${Math.round(lock.at)} ms, permit ${Math.round(permit.at)} ms (TTL ${ttl} ms)`)
    await client.close()
  } finally {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
  }
}, 60_000)
