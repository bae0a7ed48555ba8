/**
 * The framed protocol under fuzzed frames, seeded: random bytes, truncated
 * and malformed JSON, invalid UTF-8, frames past the limit (with and
 * without a readable id), wrong envelope types, bodies wrong in every way
 * the POST fuzzer knows, `__proto__` and `constructor` keys, several frames
 * in one write and one frame split over many. Sent to a node in this
 * process (so Object.prototype can be watched) and to a `zaris serve`
 * process (where a crash would show). Each bad frame is answered with a
 * 4xx for its id, or with `id: null` and the connection closed; nothing
 * changes in the fuzzed namespace, and the node answers a good frame after
 * every case.
 */
import { afterAll, describe, expect, test } from 'vitest'
import { createHandler, listen, loopbackHosts, memoryBackend, type Listening } from 'zaris/server'
import { prototypeState } from '../faults/fuzz'
import { count, figure, Random, seedFor, timeout } from '../faults/scale'
import { frameSocket, type FrameSocket } from './frame-socket'
import { startNode, type NodeProcess } from './node-process'

const NS = 'ffuzz'
const enc = new TextEncoder()

interface Case {
  kind: string
  /** Bytes as written (possibly over several writes). */
  writes: Uint8Array[]
  /** The id the answer must carry, when the frame shows one; undefined: id null and a close are allowed too. */
  id?: number
}

const line = (s: string) => enc.encode(`${s}\n`)
const framed = (id: number, path: string, body: unknown) => line(JSON.stringify({ id, path, body }))

/** Bodies each wrong for their route (a valid frame envelope around them). */
function badBody(r: Random): { path: string; body: unknown } {
  const key = r.pick(['', 'x'.repeat(2_000), 7, null, { a: 1 }, ['k']])
  return r.pick([
    { path: `/v1/${NS}/get`, body: { key } },
    { path: `/v1/${NS}/get`, body: { key: 'k', more: 1 } },
    { path: `/v1/${NS}/get`, body: null },
    { path: `/v1/${NS}/list`, body: { prefix: r.pick([1, null, 'x'.repeat(2_000)]) } },
    { path: `/v1/${NS}/commit`, body: { checks: [], ops: [{ type: 'set', key: 'k', value: 1, ttl: r.pick([-1, 0, 'soon', 1e20]) }] } },
    { path: `/v1/${NS}/commit`, body: { checks: [{ key: 'k' }], ops: [] } },
    { path: `/v1/${NS}/commit`, body: { checks: [], ops: [{ type: 'merge', key: 'k' }] } },
    { path: `/v1/${NS}/commit`, body: { checks: [], ops: [{ type: 'set', key: 'k', value: 1 }], requestId: r.pick(['short', 'has space!', 5]) } },
    { path: `/v1/${NS}/commit`, body: { checks: [], ops: Array.from({ length: 1_001 }, () => ({ type: 'delete', key: 'k' })) } },
    { path: `/v1/${NS}/commit`, body: { checks: [], ops: [{ type: 'set', key: 'k', value: JSON.parse('{"__proto__":{"polluted":1}}'), ttl: -5 }] } },
    { path: `/v1/${NS}/commit`, body: JSON.parse('{"__proto__":{"checks":[],"ops":[]}}') },
    { path: `/v1/${NS}/commit`, body: { constructor: { prototype: { polluted: 1 } }, checks: [], ops: [] } },
    { path: `/v1/${NS}/watch`, body: {} },
    { path: `/v1/${NS}/events`, body: {} },
    { path: `/v1/bad ns/get`, body: { key: 'k' } },
    { path: `/v1/${'n'.repeat(200)}/get`, body: { key: 'k' } },
    { path: `/v1/${NS}/get?key=k`, body: { key: 'k' } },
    { path: `/v1/${NS}/../get`, body: { key: 'k' } },
    { path: '/metrics', body: {} },
    { path: '/healthz', body: {} },
    { path: '', body: {} },
  ])
}

function* cases(seed: number, n: number): Generator<Case> {
  const r = new Random(seed)
  for (let i = 0; i < n; i++) {
    const id = r.int(1_000_000)
    switch (r.int(12)) {
      case 0:
        yield { kind: 'random bytes', writes: [enc.encode('#'), r.bytes(r.int(300)), line('')] }
        break
      case 1: {
        const text = JSON.stringify({ id, path: `/v1/${NS}/get`, body: { key: 'k' } })
        yield { kind: 'truncated JSON', writes: [line(text.slice(0, 1 + r.int(text.length - 2)))] }
        break
      }
      case 2: {
        const head = enc.encode(`{"id":${id},"path":"/v1/${NS}/get","body":{"key":"`)
        const bad = r.pick([[0xc3, 0x28], [0xff], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xc0, 0xaf]])
        yield { kind: 'invalid UTF-8', writes: [head, new Uint8Array(bad), line('"}}')] }
        break
      }
      case 3:
        // Over the 64 KiB body limit, id first as the adapter writes it: TOO_LARGE for that id.
        yield { kind: 'too large, with id', writes: [framed(id, `/v1/${NS}/commit`, { checks: [], ops: [{ type: 'set', key: 'k', value: 'x'.repeat(70_000 + r.int(200_000)) }] })], id }
        break
      case 4:
        yield { kind: 'too large, no id', writes: [line(`{"path":"/v1/${NS}/get","body":"${'y'.repeat(70_000 + r.int(100_000))}","id":${id}}`)] }
        break
      case 5: {
        const env = r.pick([
          `{"id":"${id}","path":"/v1/${NS}/get","body":{"key":"k"}}`,
          `{"id":${id}.5,"path":"/v1/${NS}/get","body":{"key":"k"}}`,
          `{"id":1e300,"path":"/v1/${NS}/get","body":{"key":"k"}}`,
          `{"id":${id},"path":7,"body":{"key":"k"}}`,
          `{"id":${id},"path":"/v1/${NS}/get/${'x'.repeat(600)}","body":{"key":"k"}}`,
          `{"id":${id}}`,
          'null',
          '"frame"',
          `[${id},"/v1/${NS}/get",{"key":"k"}]`,
          '{}',
          `${'['.repeat(5_000)}${']'.repeat(5_000)}`,
          `{"__proto__":{"id":${id}},"path":"/v1/${NS}/get","body":{"key":"k"}}`,
        ])
        // A missing `path` or `body` is a bad request for that id; everything else in the list has no usable id.
        yield { kind: 'bad envelope', writes: [line(env)], id: env === `{"id":${id}}` ? id : undefined }
        break
      }
      case 6:
      case 7: {
        const { path, body } = badBody(r)
        yield { kind: 'bad body', writes: [framed(id, path, body)], id }
        break
      }
      case 8: {
        const { path, body } = badBody(r)
        const bytes = framed(id, path, body)
        const writes: Uint8Array[] = []
        for (let at = 0; at < bytes.length; ) {
          const len = 1 + r.int(7)
          writes.push(bytes.subarray(at, at + len))
          at += len
        }
        yield { kind: 'bad body, a few bytes per write', writes, id }
        break
      }
      case 9: {
        const deep = `${'{"a":'.repeat(200)}1${'}'.repeat(200)}`
        yield { kind: 'deep value', writes: [line(`{"id":${id},"path":"/v1/${NS}/commit","body":{"checks":[],"ops":[{"type":"set","key":"k","value":${deep}}]}}`)], id }
        break
      }
      case 10:
        yield { kind: 'blank lines then a bad body', writes: [enc.encode('\n\r\n\n'), framed(id, `/v1/${NS}/get`, { key: 5 })], id }
        break
      default:
        yield { kind: 'NaN and Infinity', writes: [line(`{"id":${id},"path":"/v1/${NS}/commit","body":{"checks":[],"ops":[{"type":"set","key":"k","value":NaN}]}}`)] }
    }
  }
}

interface Outcome {
  kind: string
  how: 'answered' | 'closed' | 'refused-and-closed'
  status?: number
}

/** Sends one case on a fresh connection; the answer must be a 4xx for its id, or id null and a close. */
async function runCase(port: number, c: Case): Promise<Outcome> {
  const s: FrameSocket = await frameSocket(port)
  try {
    expect(s.status).toBe(101)
    for (const w of c.writes) s.write(w)
    let answer: Awaited<ReturnType<FrameSocket['next']>>
    try {
      answer = await s.next(15_000)
    } catch (err) {
      // Closed without an answer: allowed only where the frame showed no id.
      expect(s.isClosed(), `${c.kind}: neither answered nor closed: ${(err as Error).message}`).toBe(true)
      expect(c.id, `${c.kind}: closed without answering id ${c.id}: ${(err as Error).message}`).toBeUndefined()
      return { kind: c.kind, how: 'closed' }
    }
    expect(answer.status, `${c.kind}: ${JSON.stringify(answer).slice(0, 300)}`).toBeGreaterThanOrEqual(400)
    expect(answer.status).toBeLessThan(500)
    expect(typeof answer.body?.error?.code).toBe('string')
    if (answer.id === null) {
      expect(c.id, `${c.kind}: id null for a frame with id ${c.id}`).toBeUndefined()
      await s.closed
      return { kind: c.kind, how: 'refused-and-closed', status: answer.status }
    }
    if (c.id !== undefined) expect(answer.id).toBe(c.id)
    // The connection still serves a good frame.
    s.write(framed(424242, `/v1/${NS}-ok/get`, { key: 'k' }))
    expect(await s.next()).toEqual({ id: 424242, status: 200, body: { entry: null } })
    return { kind: c.kind, how: 'answered', status: answer.status }
  } finally {
    s.socket.destroy()
  }
}

async function fuzz(port: number, seed: number, n: number, after: () => Promise<void> | void): Promise<Map<string, number>> {
  const tally = new Map<string, number>()
  let i = 0
  for (const c of cases(seed, n)) {
    const o = await runCase(port, c)
    const k = `${o.kind}: ${o.how}${o.status ? ` ${o.status}` : ''}`
    tally.set(k, (tally.get(k) ?? 0) + 1)
    if (++i % 25 === 0) await after()
  }
  await after()
  return tally
}

async function untouched(url: string): Promise<void> {
  const res = await fetch(`${url}/v1/${NS}/list`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"prefix":""}' })
  expect(await res.json()).toEqual({ entries: [], more: false })
}

const n = count(400, 20_000)
let proc: NodeProcess | undefined
let served: Listening | undefined
afterAll(async () => {
  await served?.close()
  await proc?.kill9()
})

describe('fuzzed frames', () => {
  test(`${n} bad frames to a node in this process: each refused, nothing changed, prototypes clean`, async () => {
    const backend = memoryBackend()
    const errors: string[] = []
    served = await listen(createHandler({ adapterFor: backend.adapterFor, hosts: [...loopbackHosts], log: (l) => errors.push(l) }), { port: 0 })
    const before = prototypeState()
    const tally = await fuzz(served.port, seedFor('frames-in-process'), n, async () => {
      expect(prototypeState()).toBe(before)
      await untouched(served!.url)
    })
    expect(errors).toEqual([])
    await figure('fuzzed frames, node in this process: outcomes', Object.fromEntries([...tally].sort()))
  }, timeout(120_000, 1_800_000))

  test(`${n} bad frames to a zaris serve process: each refused, nothing changed, the node stays up`, async () => {
    proc = await startNode()
    const tally = await fuzz(proc.port, seedFor('frames-process'), n, async () => {
      expect(proc!.proc.exitCode).toBeNull()
      await untouched(proc!.url)
    })
    expect((await fetch(`${proc.url}/healthz`)).status).toBe(200)
    expect(proc.output()).not.toMatch(/internal error|TypeError|RangeError/)
    await figure('fuzzed frames, zaris serve process: outcomes', Object.fromEntries([...tally].sort()))
  }, timeout(120_000, 1_800_000))
})
