/**
 * The hostile load of issue 19 against a node, from one process: one
 * namespace filled with large writes; then watchers of its history that
 * never read, framed connections pipelining `list` frames that never read,
 * plain `list` requests never read, and idle sockets; while a fresh client
 * puts once a second. Used by hostile.test.ts (scaled to the machine) and by
 * hand at full size:
 *
 * ```
 * npx tsx test/faults/hostile.ts [http://127.0.0.1:7861]   # a node to attack (default: starts one)
 * ZARIS_PID=<its pid> ...     # to follow a given node's resident memory
 * ZARIS_ATTACK='{"idle":0}'   # any number of the attack changed
 * ZARIS_TIMELINE=1            # the resident memory every half second
 * ```
 *
 * The attackers are raw sockets, paused: they send, and never read.
 *
 * @module
 */
import { WebSocket } from 'ws'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { connect, type Socket } from 'node:net'
import { Client } from '../../src/core/client'
import { httpAdapter } from '../../src/adapters/http/index'

/** How big an attack is. */
export interface AttackSize {
  /** Writes that fill the namespace first, and the size of each value. */
  writes: number
  valueBytes: number
  /** Watchers of the namespace's history (`from` 0, and from a revision still kept) that never read. */
  watchers: number
  /** Framed connections, each pipelining this many `list` frames without reading. */
  framed: number
  framesEach: number
  /** Plain `list` requests never read. */
  httpLists: number
  /** Sockets that connect and send nothing. */
  idle: number
  /** How long the attackers stay, in ms. */
  holdMs: number
}

/** The attack of issue 19 as it was run against the node that fell over. */
export const FULL: AttackSize = { writes: 2_000, valueBytes: 60_000, watchers: 60, framed: 40, framesEach: 200, httpLists: 40, idle: 1_500, holdMs: 20_000 }

/** One probe of the fresh client: when it started (ms since the attack began), and how long its put took (Infinity: failed). */
export interface Probe {
  at: number
  ms: number
  error?: string
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Writes the namespace full (sequentially, as an ordinary client); answers past the store quota are counted, not retried. */
export async function fill(url: string, ns: string, size: AttackSize): Promise<{ written: number; refused: number }> {
  const value = 'x'.repeat(size.valueBytes)
  let written = 0
  let refused = 0
  for (let i = 0; i < size.writes; i++) {
    const res = await fetch(`${url}/v1/${ns}/commit`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ checks: [], ops: [{ type: 'set', key: `fill/${i}`, value }] }),
    })
    await res.arrayBuffer()
    if (res.status === 200) written++
    else refused++
  }
  return { written, refused }
}

/** Opens a raw connection, sends `request`, and stops reading. */
function silent(port: number, request: string, sockets: Socket[]): Promise<void> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => {
      if (request) s.write(request)
      s.pause()
      resolve()
    })
    s.on('error', () => resolve())
    sockets.push(s)
  })
}

/** Opens every attacker; resolves once they are all connected, with the way to end them. */
export async function openAttackers(port: number, ns: string, size: AttackSize, revision: number): Promise<{ sockets: Socket[]; close(): void }> {
  const sockets: Socket[] = []
  const host = `host: 127.0.0.1:${port}\r\n`
  const all: Array<Promise<void>> = []
  for (let i = 0; i < size.watchers; i++) {
    // Half from revision 0 (as the issue's script), half from a revision the history still keeps.
    const from = i % 2 === 0 ? 0 : Math.max(0, revision - 100)
    all.push(silent(port, `GET /v1/${ns}/watch?prefix=&from=${from} HTTP/1.1\r\n${host}\r\n`, sockets))
  }
  let frames = ''
  for (let id = 0; id < size.framesEach; id++) frames += `{"id":${id},"path":"/v1/${ns}/list","body":{"prefix":""}}\n`
  for (let i = 0; i < size.framed; i++) {
    all.push(silent(port, `GET /v1/frames HTTP/1.1\r\n${host}connection: Upgrade\r\nupgrade: zaris-frames/1\r\n\r\n${frames}`, sockets))
  }
  const list = '{"prefix":""}'
  for (let i = 0; i < size.httpLists; i++) {
    all.push(silent(port, `POST /v1/${ns}/list HTTP/1.1\r\n${host}content-type: application/json\r\ncontent-length: ${list.length}\r\n\r\n${list}`, sockets))
  }
  for (let i = 0; i < size.idle; i++) all.push(silent(port, '', sockets))
  await Promise.all(all)
  return {
    sockets,
    close() {
      for (const s of sockets) s.destroy()
    },
  }
}

/**
 * Runs {@link probe} in a process of its own (so the attackers' work in
 * this one does not delay it): `first` resolves once its first probe is done
 * (the process takes a while to start on a loaded machine), `stop()` ends it
 * and resolves its probes.
 */
export function probeProcess(url: string): { first: Promise<void>; stop(): Promise<Probe[]> } {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), 'probe', url], { stdio: ['pipe', 'pipe', 'inherit'] })
  let out = ''
  let started!: () => void
  const first = new Promise<void>((r) => (started = r))
  child.stdout!.on('data', (d) => {
    out += d
    if (out.includes('\n')) started()
  })
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  void exited.then(() => started())
  return {
    first,
    async stop() {
      child.stdin!.end()
      await exited
      return out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Probe)
        .map((p) => (p.ms === null ? { ...p, ms: Infinity } : p))
    },
  }
}

/** Puts once a second from a fresh client each time until `stop` resolves; each probe waits at most `timeoutMs`, and is told to `done` as it ends. */
export async function probe(url: string, stop: Promise<unknown>, timeoutMs = 3_000, done: (p: Probe) => void = () => {}): Promise<Probe[]> {
  const probes: Probe[] = []
  const started = performance.now()
  let stopped = false
  void stop.then(() => (stopped = true))
  for (let n = 0; !stopped; n++) {
    const at = performance.now()
    const client = new Client(httpAdapter({ endpoints: [url], namespace: 'probe', timeout: timeoutMs, retries: 0 }))
    try {
      await client.put(`probe/${n % 10}`, n)
      probes.push({ at: at - started, ms: performance.now() - at })
    } catch (err) {
      probes.push({ at: at - started, ms: Infinity, error: (err as Error).message })
    }
    done(probes.at(-1)!)
    await client.close()
    await sleep(Math.max(0, 1_000 - (performance.now() - at)))
  }
  return probes
}

/** The resident memory of process `pid` (Linux), in bytes. */
export function residentBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) * 1024 : NaN
}

/** Samples `sample()` every `everyMs` until stopped; returns the peak. */
export function sampler(sample: () => number, everyMs = 100): { stop(): number } {
  let peak = sample()
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, sample())
    } catch {
      // the process is gone
    }
  }, everyMs)
  return {
    stop() {
      clearInterval(timer)
      return peak
    },
  }
}

/** A gauge of the node's /metrics. */
export async function gauge(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  return Number(new RegExp(`^zaris_${name} (\\d+)`, 'm').exec(text)?.[1] ?? NaN)
}

/** The attack `main` runs: FULL, with any of its numbers changed by ZARIS_ATTACK (JSON), to try one kind of attacker alone. */
const SIZE: AttackSize = { ...FULL, ...(JSON.parse(process.env.ZARIS_ATTACK ?? '{}') as Partial<AttackSize>) }

/** By hand: the full attack against a node (given, or started here as `zaris serve` on its defaults), with figures. */
async function main(): Promise<void> {
  const { startNode } = await import('../server/node-process')
  const given = process.argv[2]
  const node = given ? undefined : await startNode([])
  const url = given ?? node!.url
  const port = Number(new URL(url).port)
  // A node given by URL: ZARIS_PID names its process, for its resident memory.
  const pid = node?.proc.pid ?? (process.env.ZARIS_PID ? Number(process.env.ZARIS_PID) : undefined)
  const rss = pid === undefined ? () => NaN : () => residentBytes(pid)
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`
  console.log(`node ${url}: resident ${mib(rss())} at start`)
  const t0 = performance.now()
  if (process.env.ZARIS_TIMELINE) setInterval(() => console.log(`${((performance.now() - t0) / 1000).toFixed(1)}s rss ${mib(rss())}`), 500).unref()
  const peak = sampler(rss)
  const filled = await fill(url, 'hostile', SIZE)
  const revision = filled.written + filled.refused
  const heapBefore = await gauge(url, 'process_heap_used_bytes')
  console.log(`filled: ${filled.written} written, ${filled.refused} refused (store quota); resident ${mib(rss())}, heap ${mib(heapBefore)}`)
  const probes = probeProcess(url)
  await probes.first
  await sleep(1_500)
  const attackers = await openAttackers(port, 'hostile', SIZE, revision)
  console.log(`${attackers.sockets.length} attacking sockets open; resident ${mib(rss())}`)
  await sleep(SIZE.holdMs)
  console.log(`under attack: resident ${mib(rss())}, peak ${mib(peak.stop())}; buffered output ${mib(await gauge(url, 'output_buffered_bytes'))}, cut so far: ${(await (await fetch(`${url}/metrics`)).text()).split('\n').filter((l) => l.startsWith('zaris_connections_cut_total{')).join(', ')}`)
  attackers.close()
  await sleep(10_000)
  const p = await probes.stop()
  console.log(`10 s after: resident ${mib(rss())}, heap ${mib(await gauge(url, 'process_heap_used_bytes'))} (before the attackers: ${mib(heapBefore)})`)
  console.log(p.map((x) => `${(x.at / 1000).toFixed(1)}s:${x.ms === Infinity ? "FAIL" : x.ms.toFixed(0)}`).join(" "))
  console.log(`fresh client: ${p.length} puts, slowest ${Math.max(...p.map((x) => x.ms)).toFixed(0)} ms, failed ${p.filter((x) => x.ms === Infinity).length}`)
  if (node) console.log(`SIGTERM: exit code ${await node.stop()}`)
}

if (process.argv[1]?.endsWith('hostile.ts')) {
  if (process.argv[2] === 'probe') {
    // The probe process: puts until its stdin closes, one JSON line per probe.
    const stop = new Promise<void>((r) => process.stdin.on('end', r).resume())
    void probe(process.argv[3]!, stop, 3_000, (p) => console.log(JSON.stringify(p)))
  } else void main()
}

/**
 * Runs a full garbage collection in a node started with `--inspect=127.0.0.1:0`
 * (its `output` names the inspector's address), through the inspector
 * protocol. `heapUsed` counts garbage V8 has not collected yet; on an idle
 * node nothing makes V8 collect it, so "the heap is back" is measured on the
 * heap that is still reachable, as a collection leaves it.
 */
export async function collectGarbage(output: () => string): Promise<void> {
  const address = /Debugger listening on (ws:\/\/\S+)/.exec(output())?.[1]
  if (!address) throw new Error(`the node was not started with --inspect:\n${output()}`)
  const socket = new WebSocket(address)
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve())
      socket.once('error', reject)
    })
    await new Promise<void>((resolve, reject) => {
      socket.on('message', (data) => {
        const reply = JSON.parse(String(data)) as { id?: number; error?: { message: string } }
        if (reply.id !== 1) return
        if (reply.error) reject(new Error(`HeapProfiler.collectGarbage: ${reply.error.message}`))
        else resolve()
      })
      socket.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' }))
    })
  } finally {
    socket.close()
  }
}
