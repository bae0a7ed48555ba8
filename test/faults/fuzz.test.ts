/**
 * The node's HTTP API under fuzzed requests (test/faults/fuzz.ts), seeded,
 * sent as raw bytes: to a node served in this process (`createHandler` +
 * `listen`, so Object.prototype can be watched), and to a `zaris serve`
 * process (where a crash would show). Every invalid request gets a 4xx (or 503), nothing changes in
 * any namespace, the prototypes stay clean, and the node stays up.
 */
import { afterAll, describe, expect, test } from 'vitest'
import { connect } from 'zaris'
import { createHandler, listen, loopbackHosts, memoryBackend, type Listening } from 'zaris/server'
import { startNode, type NodeProcess } from '../server/node-process'
import { FUZZ_NS, hostileRequests, invalidRequests, prototypeState, refusedStatus, viaSocket, type FuzzAnswer, type FuzzRequest } from './fuzz'
import { count, figure, seedFor, timeout } from './scale'

interface Failure {
  kind: string
  status: number
  request: string
  answer: string
}

function describeRequest(req: FuzzRequest): string {
  const body = req.body ? Buffer.from(req.body.subarray(0, 160)).toString('latin1') : ''
  return `${req.method} ${req.path.slice(0, 120)} ${JSON.stringify(req.headers)} ${req.body ? `(${req.body.byteLength} bytes) ${JSON.stringify(body)}` : ''}`
}

function judge(req: FuzzRequest, answer: FuzzAnswer, failures: Failure[], kinds: Map<string, number>, statuses: Map<number, number>): void {
  const kind = req.kind.split('/').pop()!
  kinds.set(kind, (kinds.get(kind) ?? 0) + 1)
  statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
  if (!refusedStatus(answer.status)) failures.push({ kind: req.kind, status: answer.status, request: describeRequest(req), answer: answer.body.slice(0, 300) })
}

function report(failures: Failure[]): string {
  const byKind = new Map<string, Failure[]>()
  for (const f of failures) byKind.set(f.kind, [...(byKind.get(f.kind) ?? []), f])
  return [...byKind].map(([k, fs]) => `${k}: ${fs.length} not refused, e.g. ${JSON.stringify(fs[0])}`).join('\n')
}

/** Sends requests over `connections` connections at a time. */
async function send(port: number, requests: Iterator<FuzzRequest>, connections: number, each: (req: FuzzRequest, answer: FuzzAnswer, i: number) => Promise<void> | void): Promise<void> {
  let i = 0
  await Promise.all(
    Array.from({ length: connections }, async () => {
      for (let next = requests.next(); !next.done; next = requests.next()) {
        const req = next.value
        await each(req, await viaSocket(port, req), ++i)
      }
    }),
  )
}

describe('fuzzed requests to a node in this process (createHandler + listen)', () => {
  // The long run sends 100,000 in all: half to the node in this process, half to the node process.
  const n = count(1_500, 50_000)
  test(`${n} invalid requests: each refused with a 4xx, no namespace changed, prototypes clean`, async () => {
    const backend = memoryBackend()
    const errors: string[] = []
    const handler = createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf, hosts: [...loopbackHosts], log: (line) => errors.push(line) })
    const served: Listening = await listen(handler, { port: 0 })
    const fuzz = await backend.adapterFor(FUZZ_NS)
    await fuzz.commit([], [
      { type: 'set', key: 'lock:fuzz', value: null, owner: 'someone' },
      { type: 'set', key: 'k', value: { a: 1 } },
      { type: 'set', key: 'res:fuzz', value: 'data' },
    ])
    const snapshot = async (ns: string) => JSON.stringify({ position: (await backend.positionOf(ns)).revision, entries: (await (await backend.adapterFor(ns)).list('')).entries })
    const initial = await snapshot(FUZZ_NS)
    const prototypes = prototypeState()
    const failures: Failure[] = []
    const kinds = new Map<string, number>()
    const statuses = new Map<number, number>()
    const namespaces = new Set<string>()
    const check = async (i: number) => {
      expect(prototypeState(), `after request ${i}`).toBe(prototypes)
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined()
      const now = await snapshot(FUZZ_NS)
      expect(now, `the fuzz namespace after request ${i}: ${now}`).toBe(initial)
    }
    await send(served.port, invalidRequests(seedFor('fuzz-handler'), n), 4, async (req, answer, i) => {
      judge(req, answer, failures, kinds, statuses)
      if (req.namespace && req.namespace !== FUZZ_NS) namespaces.add(req.namespace)
      if (i % 500 === 0) await check(i)
    })
    await check(n)
    for (const ns of namespaces) expect(await snapshot(ns), `namespace ${ns}`).toBe(JSON.stringify({ position: 0, entries: [] }))
    expect(failures, report(failures)).toEqual([])
    expect(handler.metrics.commits).toBe(0)
    expect(errors).toEqual([])
    await figure('fuzzed requests to a node in the test process', { requests: n, not_refused: failures.length, kinds: Object.fromEntries(kinds), statuses: Object.fromEntries(statuses) })
    await served.close()
    await backend.close()
  }, timeout(60_000, 900_000))

  test('valid requests full of __proto__ and constructor keys are stored as plain data', async () => {
    const backend = memoryBackend()
    const served = await listen(createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf }), { port: 0 })
    const prototypes = prototypeState()
    for (const { write, key, value } of hostileRequests(seedFor('hostile'), count(200, 5_000), 'hostile')) {
      const w = await viaSocket(served.port, write)
      expect(w.status, w.body).toBe(200)
      const r = await viaSocket(served.port, { kind: 'read', method: 'POST', path: '/v1/hostile/get', headers: { 'content-type': 'application/json' }, body: new TextEncoder().encode(JSON.stringify({ key })) })
      expect(r.status).toBe(200)
      const read = JSON.parse(r.body) as { entry: { key: string; value: unknown } }
      expect(read.entry.key).toBe(key)
      expect(JSON.stringify(read.entry.value)).toBe(JSON.stringify(value))
    }
    expect(prototypeState()).toBe(prototypes)
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined()
    await served.close()
    await backend.close()
  }, timeout(30_000, 300_000))
})

describe('fuzzed requests as raw bytes against a node process', () => {
  let node: NodeProcess
  afterAll(async () => {
    await node?.kill9()
  })
  const n = count(500, 50_000)
  test(`${n} invalid requests: the node stays up, refuses each with a 4xx and changes nothing`, async () => {
    node = await startNode()
    const url = `zaris://127.0.0.1:${node.port}/${FUZZ_NS}`
    const client = await connect(url)
    await client.put('k', { a: 1 })
    const lock = await client.locks.acquire('lock:fuzz', { ttl: 3_600_000, autoRenew: false })
    await client.put('res:fuzz', 'data', { fence: lock! })
    const metric = async (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(await (await fetch(`${node.url}/metrics`)).text())?.[1] ?? NaN)
    const snapshot = async () => JSON.stringify((await client.list('')).map((e) => ({ ...e, ttl: undefined })))
    const initial = await snapshot()
    const commits = await metric('zaris_commits_total')
    const failures: Failure[] = []
    const kinds = new Map<string, number>()
    const statuses = new Map<number, number>()
    const started = performance.now()
    await send(node.port, invalidRequests(seedFor('fuzz-process'), n), 8, (req, answer) => judge(req, answer, failures, kinds, statuses))
    const seconds = (performance.now() - started) / 1000
    expect(node.proc.exitCode).toBeNull()
    expect(node.proc.signalCode).toBeNull()
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200)
    expect(failures, report(failures)).toEqual([])
    expect(await snapshot()).toBe(initial)
    expect(await metric('zaris_commits_total')).toBe(commits)
    expect(node.output()).not.toMatch(/internal error|Error:/)
    await client.close()
    await figure('fuzzed requests against a node process (raw HTTP/1.1, 8 connections at a time)', { requests: n, seconds, not_refused: failures.length, crashes: 0, statuses: Object.fromEntries(statuses) })
  }, timeout(60_000, 900_000))
})
