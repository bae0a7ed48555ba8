/**
 * Where a handover through a zaris node goes: one holder and 8 waiters, each
 * a client of its own on one `zaris serve` process (memory store). The line
 * is let settle before each release, so one handover is timed alone. Stamps,
 * all on the machine's wall clock:
 *
 * - client side (this process): the release call, its commit frame sent and
 *   answered, the waiter's stream chunk that carries the release's revision,
 *   the event reaching the waiter's watch sink, the waiter's take (its
 *   adapter's commit call, the frame sent, the answer), the acquire resolving;
 *   or, when the take was parked at the node (waitChange), its answer (steps P);
 * - node side (`bench/tools/trace-preload.mjs` in the node process): the
 *   release frame read, its answer written, the event written to the first
 *   and the last of the watch streams, the take frame read and answered.
 *
 *   npx tsx bench/tools/handover-breakdown.ts [rounds=40] [waiters=8]
 *
 * HANDOVER_PROFILE=1 also profiles both processes (V8 sampling profiler, the
 * client's through the inspector, the node's with --cpu-prof) and sums the
 * samples that fall inside the handovers only (release call to grant), so
 * the settling between them does not count. HANDOVER_PROFILE_OUT=dir keeps both
 * (cut to the handovers) as client.cpuprofile and node.cpuprofile there.
 *
 * @module
 */
import { readFileSync, rmSync, existsSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client, type Adapter, type WatchEvent } from 'zaris'
import { httpAdapter, nodeTransport, type Transport } from 'zaris/http'
import { absNow, median, quantile, sleep } from '../lib/measure'
import { node } from '../lib/procs'
import { summarise } from './cpuprofile'

const ROUNDS = Number(process.argv[2] ?? 40)
const WAITERS = Number(process.argv[3] ?? 8)
const KEY = 'lock:handover'

interface Stamp {
  t: number
  tag: number
  what: string
  rev?: number
  s?: string
}
const stamps: Stamp[] = []
const stamp = (tag: number, what: string, rev?: number, s?: string) => stamps.push({ t: absNow(), tag, what, rev, s })

/** The Node transport with every commit and every watch chunk stamped for client `tag`. */
async function tracing(tag: number): Promise<Transport> {
  const inner = await nodeTransport()
  return {
    ...inner,
    name: inner.name,
    deadlines: inner.deadlines,
    close: () => inner.close(),
    async send(r) {
      const commit = r.url.endsWith('/commit')
      if (commit) stamp(tag, 'frame-sent', undefined, r.body)
      stamp(tag, `request ${r.url.replace(/^.*\/([a-z]+)(\?.*)?$/, '$1')}`)
      const res = await inner.send(r)
      if (commit && res.json) {
        const body = (await res.json()) as { revision?: number }
        stamp(tag, 'answer', body.revision)
        return { ...res, json: async () => body }
      }
      if (r.method === 'GET' && r.url.includes('/watch')) {
        const chunks = res.chunks()
        const stampChunk = (c: Uint8Array) => {
          for (const m of new TextDecoder().decode(c).matchAll(/id: (\d+)/g)) stamp(tag, 'chunk', Number(m[1]))
        }
        return {
          ...res,
          status: res.status,
          text: () => res.text(),
          cancel: () => res.cancel(),
          ref: (on: boolean) => res.ref?.(on),
          // A transport that hands chunks over as they are read (node:http) is read that way.
          pipe: res.pipe && ((onChunk: (c: Uint8Array) => void) => res.pipe!((c) => (stampChunk(c), onChunk(c)))),
          async *chunks() {
            for await (const c of chunks) {
              stampChunk(c)
              yield c
            }
          },
        }
      }
      return res
    },
  }
}

/** `inner` with watch events and commit calls stamped. */
function stamped(inner: Adapter, tag: number): Adapter {
  const a: Adapter = {
    name: inner.name,
    capabilities: inner.capabilities,
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    commit: (c, o, opt) => {
      stamp(tag, 'commit-call', undefined, JSON.stringify(o))
      return inner.commit(c, o, opt)
    },
    watch: (p, sink, from) =>
      inner.watch(p, { event: (ev: WatchEvent) => (stamp(tag, 'sink', ev.revision, ev.key), sink.event(ev)), error: (e) => sink.error(e) }, from),
    close: () => inner.close(),
  }
  if (inner.ownerGone) a.ownerGone = (o, s) => inner.ownerGone!(o, s)
  if (inner.registerOwner) a.registerOwner = (o) => inner.registerOwner!(o)
  return a
}

const traceOut = join(tmpdir(), `zaris-handover-trace-${process.pid}.json`)
const preload = fileURLToPath(new URL('./trace-preload.mjs', import.meta.url))
const PROFILE = process.env.HANDOVER_PROFILE === '1'
/** HANDOVER_PLAIN=1: no stamps at all (no socket patching, plain transport), for the CPU and total figures alone. */
const PLAIN = process.env.HANDOVER_PLAIN === '1'
// The same socket stamps in this process: when the waiter's bytes arrived, before any stream code ran.
if (!PLAIN) await import('./trace-preload.mjs')
const n = await node([], PLAIN ? {} : { NODE_OPTIONS: `--import=${preload}`, ZARIS_TRACE_OUT: traceOut, ZARIS_TRACE_PROFILE: PROFILE ? '1' : '' })
const session = new Session()
/** The handovers on the profilers' clock (monotonic µs). */
const windows: Array<[number, number]> = []
const mono = () => Number(process.hrtime.bigint() / 1000n)
const clients: Client[] = []
try {
  for (let i = 0; i <= WAITERS; i++) {
    if (PLAIN) clients.push(new Client(httpAdapter({ endpoints: [n.url], namespace: 'bench' })))
    else clients.push(new Client(stamped(httpAdapter({ endpoints: [n.url], namespace: 'bench', transport: await tracing(i) }), i)))
  }
  type Held = { release(): Promise<unknown> }
  const waiting = new Map<number, Promise<{ tag: number; hold: Held }>>()
  const wait = (i: number) =>
    waiting.set(
      i,
      clients[i]!.locks.acquire(KEY, { ttl: 30_000, wait: 60_000 }).then((hold) => {
        stamp(i, 'acquired')
        return { tag: i, hold: hold! }
      }),
    )
  let holder = 0
  let hold: Held = (await clients[0]!.locks.acquire(KEY, { ttl: 30_000 }))!
  for (let i = 1; i <= WAITERS; i++) wait(i)
  const rounds: Array<{ from: number; to: number; t0: number; t1: number }> = []
  if (PROFILE) {
    session.connect()
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', { interval: 100 })
    await session.post('Profiler.start')
  }
  let cpu0 = { client: 0, node: 0 }
  for (let r = -5; r < ROUNDS; r++) {
    if (r === 0) cpu0 = cpuNow(n.proc.pid!)
    await sleep(60) // the line settles: every waiter placed, the first watching the lock
    const from = holder
    const m0 = mono()
    const t0 = absNow()
    stamp(from, 'release-call')
    const released = hold.release()
    const next = await Promise.race(waiting.values())
    const t1 = absNow()
    await released
    waiting.delete(next.tag)
    holder = next.tag
    hold = next.hold
    wait(from)
    if (r >= 0) rounds.push({ from, to: next.tag, t0, t1 })
    if (r >= 0) windows.push([m0, m0 + (t1 - t0) * 1000])
  }
  const cpu1 = cpuNow(n.proc.pid!)
  const clientProfile = PROFILE ? (await session.post('Profiler.stop')).profile : undefined
  await sleep(50)
  if (PLAIN) {
    const per = (v: number) => (v / rounds.length).toFixed(2)
    const total = rounds.map((r) => r.t1 - r.t0)
    console.log(`handover through a node (memory), ${WAITERS} waiters, ${rounds.length} rounds, no stamps: p50 ${median(total).toFixed(3)} ms, p90 ${quantile(total, 0.9).toFixed(3)} ms`)
    console.log(`CPU per cycle (a handover and the last holder queuing again): client process ${per(cpu1.client - cpu0.client)} ms, node ${per(cpu1.node - cpu0.node)} ms`)
    process.exit(0)
  }
  // The node's stamps.
  rmSync(traceOut, { force: true })
  rmSync(`${traceOut}.cpuprofile`, { force: true })
  n.proc.kill('SIGUSR2')
  for (let i = 0; i < 100 && !existsSync(traceOut); i++) await sleep(20)
  await sleep(100)
  const nodeLog = JSON.parse(readFileSync(traceOut, 'utf8')) as Array<{ t: number; dir: 'w' | 'r'; port: number; s: string }>
  rmSync(traceOut, { force: true })
  const nodeProfile = existsSync(`${traceOut}.cpuprofile`) ? (JSON.parse(readFileSync(`${traceOut}.cpuprofile`, 'utf8')) as Profile) : undefined
  rmSync(`${traceOut}.cpuprofile`, { force: true })

  const parts = new Map<string, number[]>()
  const add = (name: string, v: number | undefined) => {
    if (v === undefined || !Number.isFinite(v)) return
    const list = parts.get(name) ?? []
    list.push(v)
    parts.set(name, list)
  }
  if (process.env.HANDOVER_DEBUG) {
    // One round in full: every commit any client sent from the settle before it to its end.
    const r = rounds[3]!
    for (const s of stamps) if (s.t >= r.t0 - 70 && s.t <= r.t1 + 1 && (s.what === 'commit-call' || s.what === 'release-call' || s.what === 'acquired')) console.log((s.t - r.t0).toFixed(2).padStart(8), s.tag, s.what, (s.s ?? '').replace(/[\u0001]/g, '^').slice(0, 160))
  }
  if (process.env.HANDOVER_DEBUG) {
    const all = (globalThis as unknown as { __zarisSocketTrace: Array<{ t: number; dir: string; s: string }> }).__zarisSocketTrace
    for (const r of rounds.slice(3, 5)) {
      console.log('-- client socket writes and reads in one handover')
      for (const e of all) if (e.t >= r.t0 && e.t <= r.t1) console.log((e.t - r.t0).toFixed(3).padStart(8), e.dir, e.s.replace(/[\u0001]/g, '^').replace(/\n/g, '|').slice(0, 150))
    }
  }
  {
    // What one cycle costs in requests: from one release call to the next.
    const counts = new Map<string, number>()
    const span = [rounds[0]!.t0, rounds.at(-1)!.t0]
    for (const st of stamps) if (st.what.startsWith('request ') && st.t >= span[0]! && st.t < span[1]!) counts.set(st.what, (counts.get(st.what) ?? 0) + 1)
    console.log(`requests per cycle: ${[...counts].map(([k, v]) => `${k.slice(8)} ${(v / (rounds.length - 1)).toFixed(2)}`).join(', ')}`)
  }
  for (const round of rounds) {
    const inRound = stamps.filter((s) => s.t >= round.t0 - 0.01 && s.t <= round.t1 + 0.01)
    const first = (pred: (s: Stamp) => boolean) => inRound.find(pred)
    const relSent = first((s) => s.tag === round.from && s.what === 'frame-sent' && s.s!.includes('"delete"') && s.s!.includes(KEY))
    const relAns = relSent && stamps.find((s) => s.t >= relSent.t && s.tag === round.from && s.what === 'answer')
    const R = relAns?.rev
    if (R === undefined) continue
    const chunk = first((s) => s.tag === round.to && s.what === 'chunk' && s.rev === R)
    const sink = first((s) => s.tag === round.to && s.what === 'sink' && s.rev === R)
    const take = first((s) => s.tag === round.to && s.what === 'commit-call' && s.t >= (sink?.t ?? 0))
    const takeSent = take && first((s) => s.tag === round.to && s.what === 'frame-sent' && s.t >= take.t)
    const takeAns = takeSent && first((s) => s.tag === round.to && s.what === 'answer' && s.t >= takeSent.t)
    const nodeIn = nodeLog.filter((e) => e.t >= round.t0 - 0.5 && e.t <= round.t1 + 0.5)
    const nRelRead = nodeIn.find((e) => e.dir === 'r' && e.s.includes('"delete"') && e.s.includes(KEY))
    const nRelAns = nodeIn.find((e) => e.dir === 'w' && e.s.includes('"status"') && e.s.includes(`"revision":${R}`))
    const sse = nodeIn.filter((e) => e.dir === 'w' && e.s.includes(`id: ${R}\n`))
    const R2 = takeAns?.rev
    const nTakeRead = takeSent && nodeIn.find((e) => e.dir === 'r' && e.t >= takeSent.t && e.s.includes('"path"') && e.s.includes(KEY))
    const nTakeAns = R2 === undefined ? undefined : nodeIn.find((e) => e.dir === 'w' && e.s.includes('"status"') && e.s.includes(`"revision":${R2}`))
    const local = ((globalThis as unknown as { __zarisSocketTrace: Array<{ t: number; dir: string; s: string }> }).__zarisSocketTrace).filter((e) => e.t >= round.t0 - 0.5 && e.t <= round.t1 + 0.5)
    const cRead = local.filter((e) => e.dir === 'r' && e.s.includes(`id: ${R}\n`))
    const cTakeAns = R2 === undefined ? undefined : local.find((e) => e.dir === 'r' && e.s.includes('"status"') && e.s.includes(`"revision":${R2}`))
    const d = (a?: { t: number }, b?: { t: number }) => (a && b ? b.t - a.t : undefined)
    const start = { t: round.t0 }
    add('01 release call -> release frame sent (holder)', d(start, relSent))
    add('02 release frame sent -> read by node', d(relSent, nRelRead))
    add('03 node: release read -> commit answered', d(nRelRead, nRelAns))
    add('04 node: answer -> event written to 1st stream', d(nRelAns, sse[0]))
    add(`05 node: event to 1st -> last of ${sse.length} streams`, d(sse[0], sse.at(-1)))
    add('06a node wrote event (1st) -> 1st client socket read', d(sse[0], cRead[0]))
    add(`06b 1st -> last of ${cRead.length} client socket reads`, d(cRead[0], cRead.at(-1)))
    add('06c node wrote event (1st) -> waiter stream chunk read', d(sse[0], chunk))
    add('07 waiter chunk -> event in waiter sink (parse)', d(chunk, sink))
    add('08 sink -> take commit call (acquire machine)', d(sink, take))
    add('09 take call -> take frame sent', d(take, takeSent))
    add('10 take frame sent -> read by node', d(takeSent, nTakeRead))
    add('11 node: take read -> take answered', d(nTakeRead, nTakeAns))
    add('12a node answer -> client socket read', d(nTakeAns, cTakeAns))
    add('12b client socket read -> waiter has answer', d(cTakeAns, takeAns))
    add('13 take answer -> acquire resolves', d(takeAns, { t: round.t1 }))
    if (!sink) {
      // The take was parked at the node (waitChange): no event, no take request; the node tried it again on the release.
      const parked = first((s) => s.tag === round.to && s.what === 'answer' && (s.rev ?? 0) > R)
      const nParkAns = parked && nodeIn.find((e) => e.dir === 'w' && e.s.includes('"status"') && e.s.includes(`"revision":${parked.rev}`))
      const cParkAns = parked && local.find((e) => e.dir === 'r' && e.s.includes('"status"') && e.s.includes(`"revision":${parked.rev}`))
      add('P1 node: release read -> parked take answered', d(nRelRead, nParkAns))
      add('P2 node: release answered -> parked take answered', d(nRelAns, nParkAns))
      add('P3 node wrote parked answer -> waiter socket read', d(nParkAns, cParkAns))
      add('P4 waiter socket read -> waiter has answer', d(cParkAns, parked))
      add('P5 parked answer -> acquire resolves', d(parked, { t: round.t1 }))
    }
    add('-- release call -> event in waiter sink', d(start, sink))
    add('-- release call -> release resolved (holder)', d(start, relAns))
    add('== release call -> next holder (total)', round.t1 - round.t0)
  }
  console.log(`handover through a node (memory), ${WAITERS} waiters, ${rounds.length} rounds; ms, p50 / p90`)
  // CPU time does not stretch with the machine's load as wall time does: what a quiet machine would spend.
  const per = (v: number) => (v / rounds.length).toFixed(2)
  console.log(`CPU per cycle (a handover and the last holder queuing again): client process ${per(cpu1.client - cpu0.client)} ms, node ${per(cpu1.node - cpu0.node)} ms`)
  for (const [k, v] of [...parts].sort(([a], [b]) => a.localeCompare(b))) {
    console.log(`${k.padEnd(56)} ${median(v).toFixed(3).padStart(7)} ${quantile(v, 0.9).toFixed(3).padStart(7)}  (n=${v.length})`)
  }
  if (PROFILE) {
    const span = windows.reduce((a, [s, e]) => a + e - s, 0) / 1000
    console.log(`\nCPU inside the ${windows.length} handovers (${span.toFixed(1)} ms of wall time in all)`)
    console.log('-- client process (holder and waiters) --')
    console.log(summarise(within(clientProfile as unknown as Profile, windows), 22))
    if (nodeProfile) console.log('-- node process --\n' + summarise(within(nodeProfile, windows), 22))
    // HANDOVER_PROFILE_OUT=dir: both profiles, cut to the handovers, kept for bench/tools/cpuprofile.ts.
    const outDir = process.env.HANDOVER_PROFILE_OUT
    if (outDir) {
      writeFileSync(join(outDir, 'client.cpuprofile'), JSON.stringify(within(clientProfile as unknown as Profile, windows)))
      if (nodeProfile) writeFileSync(join(outDir, 'node.cpuprofile'), JSON.stringify(within(nodeProfile, windows)))
    }
  }
} finally {
  // A waiter still in line ends with the client's close.
  process.on('unhandledRejection', () => {})
  await Promise.allSettled(clients.map((c) => c.close()))
  await n.stop()
}

/** CPU ms used so far by this process and by the node process (from /proc, 10 ms ticks). */
function cpuNow(nodePid: number): { client: number; node: number } {
  const u = process.cpuUsage()
  const f = readFileSync(`/proc/${nodePid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  // utime and stime are fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
  return { client: (u.user + u.system) / 1000, node: (Number(f[11]) + Number(f[12])) * 10 }
}

interface Profile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number; children?: number[] }>
  samples: number[]
  timeDeltas: number[]
  startTime: number
  endTime: number
}

/** The profile's samples that fall inside `windows` (µs on the same monotonic clock); its span is theirs. */
function within(p: Profile, windows: Array<[number, number]>): Profile {
  const samples: number[] = []
  const deltas: number[] = []
  let t = p.startTime
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0
    if (windows.some(([s, e]) => t >= s && t <= e)) {
      samples.push(p.samples[i]!)
      deltas.push(p.timeDeltas[i] ?? 0)
    }
  }
  const span = windows.reduce((a, [s, e]) => a + e - s, 0)
  return { ...p, samples, timeDeltas: deltas, startTime: 0, endTime: span }
}
