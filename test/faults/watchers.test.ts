/**
 * Idle watchers on one node process: as many open watch streams as the
 * node's cap (`--max-watchers`), each its own TCP connection, all established
 * (their `ready` event read); the node's memory is reported; one more gets
 * 429 RATE_LIMITED; a change still reaches every watcher; closing them
 * frees the slots.
 */
import { readFileSync } from 'node:fs'
import { connect as tcpConnect, type Socket } from 'node:net'
import { afterAll, expect, test } from 'vitest'
import { connect } from 'zaris'
import { startNode, type NodeProcess } from '../server/node-process'
import { until } from './procs'
import { count, figure, timeout } from './scale'

let node: NodeProcess | undefined
const sockets: Socket[] = []
afterAll(async () => {
  for (const s of sockets) s.destroy()
  await node?.kill9()
})

/** Resident memory of a process, in MiB. */
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(m?.[1] ?? NaN) / 1024
}

interface RawWatch {
  socket: Socket
  /** Everything received so far. */
  text(): string
  status(): number
}

/** Opens a watch stream over its own connection; resolves once the node answered the headers. */
function openWatch(port: number, path: string): Promise<RawWatch> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host: '127.0.0.1', port })
    sockets.push(socket)
    let text = ''
    let status = 0
    socket.setEncoding('utf8')
    socket.on('error', reject)
    socket.on('data', (d: string) => {
      text += d
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text)
      if (m && status === 0) {
        status = Number(m[1])
        resolve({ socket, text: () => text, status: () => status })
      }
    })
    socket.on('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\naccept: text/event-stream\r\n\r\n`))
  })
}

const n = count(1_000, 10_000)

test(`${n} idle watchers on one node: memory reported, the next one gets 429, a change reaches them all`, async () => {
  // Each watcher is a connection: the node's connection cap (2 048 by default) must not be what refuses them.
  const serving = await startNode(['--max-watchers', String(n), '--max-connections', String(n + 64)])
  node = serving
  const port = serving.port
  const pid = serving.proc.pid!
  const before = rssMiB(pid)
  const started = performance.now()
  const watches: RawWatch[] = []
  for (let i = 0; i < n; i += 200) {
    const batch = await Promise.all(Array.from({ length: Math.min(200, n - i) }, (_, j) => openWatch(port, `/v1/idle/watch?prefix=${encodeURIComponent(`w:${(i + j) % 100}`)}`)))
    watches.push(...batch)
  }
  expect(watches.every((w) => w.status() === 200)).toBe(true)
  await until(() => watches.every((w) => w.text().includes('event: ready')), 60_000, 'every watcher established')
  const openMs = performance.now() - started
  const after = rssMiB(pid)
  const extra = await openWatch(port, '/v1/idle/watch?prefix=extra')
  expect(extra.status()).toBe(429)
  await until(() => extra.text().includes('RATE_LIMITED'), 5_000, 'the 429 body')
  extra.socket.destroy()
  // Idle is not dead: one put under w:7 reaches the n/100 watchers of that prefix.
  const client = await connect(`zaris://127.0.0.1:${port}/idle`)
  const e = await client.put('w:7', 'ping')
  const mine = watches.filter((_, i) => i % 100 === 7)
  await until(() => mine.every((w) => w.text().includes(`id: ${e.revision}`)), 30_000, 'the put reaching its watchers')
  const metrics = await (await fetch(`${serving.url}/metrics`)).text()
  expect(Number(/^zaris_watchers (\d+)/m.exec(metrics)?.[1])).toBe(n)
  for (const w of watches) w.socket.destroy()
  await until(async () => Number(/^zaris_watchers (\d+)/m.exec(await (await fetch(`${serving.url}/metrics`)).text())?.[1]) === 0, 30_000, 'the slots freed')
  const again = await openWatch(port, '/v1/idle/watch?prefix=again')
  expect(again.status()).toBe(200)
  again.socket.destroy()
  await client.close()
  await figure(`${n} idle watch streams on one node process`, {
    watchers: n,
    rss_before_mib: before,
    rss_with_watchers_mib: after,
    kib_per_watcher: ((after - before) * 1024) / n,
    open_all_ms: openMs,
    past_cap: 429,
  })
}, timeout(60_000, 300_000))
