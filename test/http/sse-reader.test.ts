/**
 * The client's reader of the node's event stream (src/adapters/http/sse-reader.ts),
 * fed what the node's own writer (src/server/sse-stream.ts) emits: `ready`,
 * changes (`id:` + `data:`), `progress`, `error`, pings, `retry:`. A stream
 * cut into chunks anywhere (inside a UTF-8 sequence, between `\r` and `\n`)
 * reads as the same events; a line or an event past the bound, and bytes
 * that are not UTF-8, are a `ZarisError`, never a crash or unbounded memory.
 */
import { createServer } from 'node:http'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { isZarisError, ZarisError, type WatchEvent } from 'zaris'
import { SseReader } from '../../src/adapters/http/sse-reader'
import { SseStream } from '../../src/server/sse-stream'
import { fetchTransport, httpAdapter } from 'zaris/http'

type Got = Array<[string, string]>

/** What the node's writer sends for `parts`, as bytes. */
function written(parts: Part[]): Uint8Array {
  const out: string[] = []
  const stream = new SseStream({ write: (c) => (out.push(c), true), drain: (fn) => fn(), end: () => {} }, { revision: 3, heartbeat: 15_000, epoch: 'e1' }, 60_000, () => {})
  out.push('retry: 1000\n\n')
  for (const p of parts) {
    if (p.kind === 'ready') stream.ready()
    else if (p.kind === 'ping') stream.write(': ping\n\n')
    else if (p.kind === 'progress') stream.write(`event: progress\ndata: {"revision":${p.revision}}\n\n`)
    else stream.event(p.event)
  }
  stream.fail(new ZarisError('UNAVAILABLE', 'the node is closing\nnow'))
  return new TextEncoder().encode(out.join(''))
}

type Part = { kind: 'ready' } | { kind: 'ping' } | { kind: 'progress'; revision: number } | { kind: 'event'; event: WatchEvent }

// Keys and values with every kind of character JSON and UTF-8 carry: multi-byte, astral, line ends, ':'.
const text = fc.string({ unit: fc.oneof(fc.constantFrom('a', ':', ' ', '\n', '\r', 'é', '€', '😀', '\u2028'), fc.string({ unit: 'grapheme', maxLength: 1 })), maxLength: 12 })
const watchEvent: fc.Arbitrary<WatchEvent> = fc.record({
  revision: fc.integer({ min: 1, max: 1e6 }),
  key: text,
  type: fc.constantFrom('put' as const, 'delete' as const, 'expire' as const),
  value: fc.oneof(text, fc.integer(), fc.constant(null)),
  owner: text,
})
const part: fc.Arbitrary<Part> = fc.oneof(
  fc.constant({ kind: 'ready' as const }),
  fc.constant({ kind: 'ping' as const }),
  fc.integer({ min: 0, max: 1e9 }).map((revision) => ({ kind: 'progress' as const, revision })),
  watchEvent.map((event) => ({ kind: 'event' as const, event })),
)

function read(chunks: Uint8Array[], max = 1 << 20): Got {
  const got: Got = []
  const reader = new SseReader((type, data) => got.push([type, data]), max)
  for (const c of chunks) reader.feed(c)
  return got
}

/** `bytes` cut at `cuts` (positions, any order, repeats allowed). */
function cut(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
  const out: Uint8Array[] = []
  let from = 0
  for (const c of [...at, bytes.length]) {
    out.push(bytes.subarray(from, c))
    from = c
  }
  return out
}

/** The stream with its line ends written as `end` (`\r\n` or `\r`: both are SSE line ends). */
function withEnds(bytes: Uint8Array, end: string): Uint8Array {
  return new TextEncoder().encode(new TextDecoder().decode(bytes).replaceAll('\n', end))
}

describe('a stream the node wrote', () => {
  test('reads as the events written, in order, data byte for byte', () => {
    const ev: WatchEvent = { revision: 7, key: 'lock:ä/😀', type: 'put', value: 'a\nb' }
    const got = read([written([{ kind: 'ready' }, { kind: 'ping' }, { kind: 'event', event: ev }, { kind: 'progress', revision: 9 }])])
    expect(got.map(([t]) => t)).toEqual(['ready', 'message', 'progress', 'error'])
    expect(JSON.parse(got[0]![1])).toEqual({ revision: 3, heartbeat: 15_000, epoch: 'e1' })
    expect(JSON.parse(got[1]![1])).toEqual(ev)
    expect(JSON.parse(got[2]![1])).toEqual({ revision: 9 })
    expect(JSON.parse(got[3]![1])).toMatchObject({ code: 'UNAVAILABLE', message: 'the node is closing\nnow' })
  })

  test('cut in two at every byte, or one byte a chunk, it reads the same (\\n, \\r\\n and \\r line ends)', () => {
    const ev: WatchEvent = { revision: 12, key: 'k€y😀', type: 'put', value: { x: 'é' } }
    for (const end of ['\n', '\r\n', '\r']) {
      const bytes = withEnds(written([{ kind: 'ready' }, { kind: 'event', event: ev }, { kind: 'ping' }, { kind: 'event', event: { ...ev, revision: 13 } }]), end)
      const whole = read([bytes])
      expect(whole).toHaveLength(4)
      for (let i = 0; i <= bytes.length; i++) expect(read(cut(bytes, [i]))).toEqual(whole)
      expect(read(Array.from(bytes, (b) => Uint8Array.of(b)))).toEqual(whole)
    }
  })

  test('property: any stream of the node, cut anywhere into any chunks, reads as the same events', () => {
    fc.assert(
      fc.property(fc.array(part, { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 40 }), fc.constantFrom('\n', '\r\n', '\r'), (parts, cuts, end) => {
        const bytes = withEnds(written(parts), end)
        const whole = read([bytes])
        // Every part but pings is an event, and `fail` adds the error.
        expect(whole).toHaveLength(parts.filter((p) => p.kind !== 'ping').length + 1)
        parts
          .filter((p) => p.kind === 'event')
          .forEach((p, i) => expect(JSON.parse(whole.filter(([t]) => t === 'message')[i]![1])).toEqual(JSON.parse(JSON.stringify(p.event))))
        expect(read(cut(bytes, cuts))).toEqual(whole)
      }),
      { numRuns: 400 },
    )
  })
})

describe('the bound and bad bytes', () => {
  test('a line that never ends fails once past the bound, with a ZarisError, holding no more than that', () => {
    const reader = new SseReader(() => {}, 4096)
    const kib = new TextEncoder().encode('data: ' + 'x'.repeat(1018))
    for (let i = 0; i < 4; i++) reader.feed(kib)
    let error: unknown
    try {
      reader.feed(kib)
    } catch (err) {
      error = err
    }
    expect(isZarisError(error, 'INTERNAL')).toBe(true)
    expect((error as Error).message).toMatch(/line over 4096 bytes/)
    // What was held is let go: a stream that goes on reads from its next line.
    const got: Got = []
    const after = new SseReader((t, d) => got.push([t, d]), 4096)
    after.feed(kib)
    after.feed(new TextEncoder().encode('\n\ndata: 1\n\n'))
    expect(got).toEqual([['message', 'x'.repeat(1018)], ['message', '1']])
  })

  test('an event of many short lines that never ends fails too', () => {
    const reader = new SseReader(() => {}, 1000)
    const line = new TextEncoder().encode(`data: ${'y'.repeat(90)}\n`)
    let error: unknown
    try {
      for (let i = 0; i < 100; i++) reader.feed(line)
    } catch (err) {
      error = err
    }
    expect(isZarisError(error, 'INTERNAL')).toBe(true)
    expect((error as Error).message).toMatch(/event's data over 1000 characters/)
  })

  test('bytes that are not UTF-8 are a ZarisError', () => {
    const reader = new SseReader(() => {}, 1000)
    expect(() => reader.feed(Uint8Array.of(0x64, 0x61, 0xff, 0xfe, 0x0a, 0x0a))).toThrow(ZarisError)
  })

  test('property: garbage never crashes it: events (strings) or a ZarisError, and never more held than the bound', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 20 }), fc.array(fc.string({ maxLength: 30 }), { maxLength: 10 }), (raw, lines) => {
        const chunks = [...raw, ...lines.map((l) => new TextEncoder().encode(l))]
        const reader = new SseReader((type, data) => {
          expect(typeof type).toBe('string')
          expect(data.length).toBeLessThanOrEqual(256)
        }, 256)
        for (const c of chunks) {
          try {
            reader.feed(c)
          } catch (err) {
            expect(isZarisError(err, 'INTERNAL')).toBe(true)
          }
        }
      }),
      { numRuns: 300 },
    )
  })
})

describe('a fake node (a real HTTP server) whose stream the reader cannot read', () => {
  /** Answers every watch with `ready`, one good change, then `bad` bytes, and keeps the stream open. */
  async function fakeNode(bad: Uint8Array): Promise<{ url: string; close(): Promise<void> }> {
    const server = createServer((req, res) => {
      if (!req.url!.includes('/watch')) return void res.writeHead(404).end()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(`event: ready\ndata: {"revision":1,"epoch":"e1","heartbeat":15000}\n\n`)
      res.write(`id: 2\ndata: {"type":"put","key":"k/1","revision":2,"value":1,"created":2}\n\n`)
      setTimeout(() => res.write(bad), 20)
    })
    server.on('upgrade', (_req, socket) => socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n'))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    return {
      url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
      close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
    }
  }

  const garbage: Array<[string, Uint8Array]> = [
    ['bytes that are not UTF-8', Uint8Array.of(0x64, 0x61, 0x74, 0x61, 0x3a, 0xff, 0xfe, 0x0a, 0x0a)],
    ['a change that is not JSON', new TextEncoder().encode('data: {nope\n\n')],
  ]
  for (const [what, bad] of garbage) {
    for (const transport of ['node:http', 'fetch'] as const) {
      test(`${what}, over ${transport}: the watch gets its good change, then an INTERNAL ZarisError`, async () => {
        const node = await fakeNode(bad)
        const adapter = httpAdapter({ endpoints: [node.url], namespace: 'fake', ...(transport === 'fetch' ? { transport: fetchTransport() } : {}) })
        const keys: string[] = []
        const error = new Promise<Error>((resolve) => void adapter.watch('k/', { event: (ev) => void keys.push(ev.key), error: resolve }))
        const err = await error
        expect(keys).toEqual(['k/1'])
        expect(isZarisError(err, 'INTERNAL')).toBe(true)
        await adapter.close()
        await node.close()
      })
    }
  }
})
