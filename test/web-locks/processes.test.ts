/**
 * zaris/web-locks across processes: Node processes on one zaris node, each
 * running `locks.request('job', async () => …)`, never overlap — judged
 * from the history they print (windows, test/conformance/windows.ts) and
 * from a store counter each callback counts itself in and out of — and the
 * same check catches workers that overlap (an injected bug: every request
 * steals). A holder killed with `kill -9` frees the lock at its TTL.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { connect } from 'zaris'
import { checkWindows, type Window } from '../conformance/windows'
import { bundle } from '../server/cli-bundle'
import { root, startNode, type NodeProcess } from '../server/node-process'

let node: NodeProcess
const procs: ChildProcess[] = []
beforeAll(async () => {
  node = await startNode()
})
afterAll(async () => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL')
  await node?.stop()
})

interface Line {
  id: string
  ev: 'start' | 'end' | 'holding' | 'done' | 'rejected'
  token?: number
  t?: number
  inside?: number
  name?: string
}

/** Starts a worker; `lines` fills as it prints, `waitFor` resolves the first line that matches. */
/** The worker bundled once per state of the sources (../server/cli-bundle.ts): it starts in a fraction of tsx's time. */
const jobWorker = () => bundle('zaris-job-worker', ['test/web-locks/fixtures/job-worker.ts'], ['test/web-locks/fixtures'])['test/web-locks/fixtures/job-worker.ts']!

function worker(config: { id: string; key: string; ttl: number; mode: 'loop' | 'steal' | 'hold'; rounds?: number; together?: number; ns: string }) {
  const url = `zaris://127.0.0.1:${node.port}/${config.ns}`
  const proc = spawn(process.execPath, [jobWorker(), JSON.stringify({ rounds: 0, together: 1, ...config, url })], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  procs.push(proc)
  const lines: Line[] = []
  let out = ''
  let err = ''
  const waiters: Array<() => void> = []
  proc.stdout!.on('data', (d: Buffer) => {
    out += d.toString()
    const parts = out.split('\n')
    out = parts.pop()!
    for (const p of parts) lines.push(JSON.parse(p) as Line)
    for (const w of waiters.splice(0)) w()
  })
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()))
  const exited = new Promise<void>((r) => proc.once('exit', () => r()))
  const waitFor = async (ev: Line['ev'], timeout = 30_000): Promise<Line> => {
    const deadline = Date.now() + timeout
    for (;;) {
      const hit = lines.find((l) => l.ev === ev)
      if (hit) return hit
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`worker ${config.id} never printed ${ev}:\n${err}`)
      await new Promise<void>((r) => {
        waiters.push(r)
        setTimeout(r, 100)
      })
    }
  }
  return { proc, lines, waitFor, exited }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The windows of a history: one per callback, from its start line to its end line. */
function windowsOf(lines: Line[], key: string): Window[] {
  const starts = new Map<string, Line>()
  const out: Window[] = []
  for (const l of lines) {
    const k = `${l.id}:${l.token}`
    if (l.ev === 'start') starts.set(k, l)
    if (l.ev === 'end') {
      const s = starts.get(k)!
      out.push({ key, mode: 'exclusive', owner: l.id, token: l.token!, start: s.t!, end: l.t! })
    }
  }
  return out
}

async function run(mode: 'loop' | 'steal', ns: string, rounds: number) {
  const workers = ['a', 'b'].map((id) => worker({ id, key: 'job', ttl: 10_000, mode, rounds, together: 2, ns }))
  await Promise.all(workers.map((w) => w.waitFor('done')))
  await Promise.all(workers.map((w) => w.exited))
  const lines = workers.flatMap((w) => w.lines)
  return { lines, report: checkWindows(windowsOf(lines, 'job')), inside: lines.filter((l) => l.ev === 'start').map((l) => l.inside!) }
}

test('two processes, each running locks.request("job", async () => …), never overlap', async () => {
  const { lines, report, inside } = await run('loop', 'jobs', 15)
  expect(report.windows).toBe(30)
  expect(report.violations).toEqual([])
  expect(Math.max(...inside)).toBe(1)
  // Both took turns, with tokens that only rise.
  const tokens = lines.filter((l) => l.ev === 'start').sort((x, y) => x.t! - y.t!).map((l) => l.token!)
  expect(tokens).toEqual([...tokens].sort((x, y) => x - y))
  // They contended: each waited for the other at least once (a grant to one came between two of the other's).
  const byTime = lines.filter((l) => l.ev === 'start').sort((x, y) => x.t! - y.t!).map((l) => l.id)
  expect(byTime.filter((id, i) => i > 0 && id !== byTime[i - 1]).length).toBeGreaterThanOrEqual(2)
}, 60_000)

test('the same check catches processes that overlap (injected: every request steals)', async () => {
  const { lines, report, inside } = await run('steal', 'steals', 15)
  expect(lines.some((l) => l.ev === 'rejected' && l.name === 'AbortError')).toBe(true)
  expect(report.violations.length).toBeGreaterThan(0)
  expect(Math.max(...inside)).toBeGreaterThan(1)
}, 60_000)

test('a holder killed with kill -9 frees the lock at its TTL', async () => {
  const ttl = 1_000
  const holder = worker({ id: 'holder', key: 'victim', ttl, mode: 'hold', ns: 'kill' })
  const held = await holder.waitFor('holding')
  const next = worker({ id: 'next', key: 'victim', ttl: 10_000, mode: 'loop', rounds: 1, ns: 'kill' })
  // The next process stands in line while the holder renews, past its TTL.
  const watcher = await connect(`zaris://127.0.0.1:${node.port}/kill`)
  for (let i = 0; i < 300 && !(await watcher.locks.query('victim')).pending.some((p) => p.owner === 'next'); i++) await sleep(50)
  await sleep(ttl + 300)
  expect(next.lines.filter((l) => l.ev === 'start')).toEqual([])
  expect((await watcher.locks.query('victim')).pending.map((p) => p.owner)).toEqual(['next'])
  await watcher.close()
  const killedAt = Number(process.hrtime.bigint()) / 1e6
  holder.proc.kill('SIGKILL')
  const start = await next.waitFor('start')
  const freedAfter = start.t! - killedAt
  // It renews every ttl/3, so the store frees it between 2/3 of a TTL and a TTL after the kill.
  expect(freedAfter, `granted ${freedAfter} ms after the kill`).toBeGreaterThan(ttl / 2)
  expect(freedAfter, `granted ${freedAfter} ms after the kill`).toBeLessThan(ttl + 1_500)
  expect(start.token!).toBeGreaterThan(held.token!)
  await next.waitFor('done')
}, 60_000)
